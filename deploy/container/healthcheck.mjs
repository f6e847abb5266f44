// The image's HEALTHCHECK: exit 0 when GET <url> answers 200 within FRED_HEALTH_TIMEOUT_MS
// (4 s each), else print why and exit 1. The URL is FRED_HEALTH_URL (`unix:/path` for a
// backend on a socket); unset, providerd's default port 8080 is asked over https and then
// over http, since `fred up` and a providerd with tls_cert_file serve https there and one
// without serves plain http. Plain Node, no dependency, so it runs in the image as it is.
//
// Over https the certificate is not verified: the probe sends nothing secret and reads only
// the status of a process in its own container, and an operator's certificate names the
// provider's public host, not the loopback address the probe calls.
import http from "node:http";
import https from "node:https";

const timeoutMs = Number(process.env.FRED_HEALTH_TIMEOUT_MS ?? 4000);
const urls = process.env.FRED_HEALTH_URL
  ? [process.env.FRED_HEALTH_URL]
  : ["https://127.0.0.1:8080/health", "http://127.0.0.1:8080/health"];

/**
 * Resolves to undefined when `url` answered 200, else to the reason it did not. A backend
 * listening on a Unix socket is probed as `unix:/path/to.sock` (GET /health over it).
 */
function probe(url) {
  return new Promise((resolve) => {
    const options = { rejectUnauthorized: false, timeout: timeoutMs };
    const answered = (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? undefined : `GET ${url} answered ${res.statusCode}`);
    };
    const req = url.startsWith("unix:")
      ? http.get({ ...options, socketPath: url.slice("unix:".length), path: "/health" }, answered)
      : (new URL(url).protocol === "https:" ? https : http).get(url, options, answered);
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (err) => resolve(`GET ${url}: ${err.message}`));
  });
}

const problems = [];
for (const url of urls) {
  const problem = await probe(url);
  if (problem === undefined) process.exit(0);
  problems.push(problem);
}
console.error(`unhealthy: ${problems.join("; ")}`);
process.exit(1);
