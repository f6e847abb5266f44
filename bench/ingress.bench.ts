/**
 * Ingress through a real Caddy on the real engine. Prints JSON lines:
 *   ingress_ready_to_first_200   provision callback "success" → first 200 over HTTPS on the
 *                                lease's hostname (route write + on-demand internal cert)
 *   ingress_throughput           requests/s to one busybox httpd container through Caddy
 *                                (HTTPS, hostname routing) and direct to its bridge address
 *                                (plain HTTP), same run, same concurrency; goal ratio ≥ 0.8
 * Each line carries the load average at the end of its measurement.
 */
import { loadavg } from "node:os";
import { Pool } from "undici";
import {
  httpdManifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  startInProcess,
} from "../test/backend/docker/helpers.ts";
import { httpsGet, startCaddy } from "../test/backend/docker/ingress/caddy-helper.ts";
import { provisionAndWait, provisionBody } from "../test/backend/docker/provision-helper.ts";
import { startReceiver } from "../test/backend/kit/receiver.ts";
import { signedClient } from "../test/backend/kit/signed-client.ts";
import { holdEngineLock } from "../test/support/docker.ts";
import { pickFreePort } from "../test/support/index.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const NAME = "bench-ingress";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const load = () => loadavg().map((l) => Number(l.toFixed(2)));

async function throughput(client: Pool, host: string): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < REQUESTS) {
      next++;
      const res = await client.request({ method: "GET", path: "/", headers: { host } });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`answered ${res.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return REQUESTS / ((performance.now() - started) / 1000);
}

await holdEngineLock();
const caddy = await startCaddy();
const httpsPort = await pickFreePort();
const setup = prepareDockerBackend({
  name: NAME,
  volume_filesystem: "none",
  ingress: {
    enabled: true,
    wildcard_domain: "apps.bench.test",
    admin_url: caddy.adminUrl,
    https_listen: `127.0.0.1:${httpsPort}`,
    health_interval: "1h",
  },
});
const backend = await startInProcess(setup);
const rx = await startReceiver(SECRET);
const c = signedClient(backend.url, SECRET);
try {
  const latencies: number[] = [];
  let last: { lease: string; fqdn: string; dial: string } | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    const call = provisionBody(rx, httpdManifest(), [{ sku: SKU, quantity: 1, service_name: "app" }]);
    await provisionAndWait(c, rx, call);
    const ready = performance.now();
    const fqdn = backend.ingress?.fqdns(call.lease).services.get("app") as string;
    for (;;) {
      const answer = await httpsGet(fqdn, httpsPort, caddy.caCert(NAME));
      if (answer.status === 200) break;
    }
    latencies.push(performance.now() - ready);
    type Route = { match?: { host?: string[] }[]; handle?: { upstreams?: { dial?: string }[] }[] };
    const routes = (await caddy.config(`apps/http/servers/fred_${NAME}/routes`)) as Route[];
    const dial = routes.find((r) => r.match?.[0]?.host?.[0] === fqdn)?.handle?.[0]?.upstreams?.[0]?.dial;
    last = { lease: call.lease, fqdn, dial: dial ?? "" };
  }
  console.log(
    JSON.stringify({
      bench: "ingress_ready_to_first_200",
      rounds: ROUNDS,
      median_ms: Number(median(latencies).toFixed(1)),
      max_ms: Number(Math.max(...latencies).toFixed(1)),
      loadavg: load(),
    }),
  );
  if (!last?.dial) throw new Error("no upstream address found in the proxy config");
  const proxied = new Pool(`https://127.0.0.1:${httpsPort}`, {
    connect: { ca: caddy.caCert(NAME), servername: last.fqdn },
    connections: CONCURRENCY,
  });
  const direct = new Pool(`http://${last.dial}`, { connections: CONCURRENCY });
  await throughput(proxied, last.fqdn); // warm-up: connections, certificate cache
  const viaProxy = await throughput(proxied, last.fqdn);
  const straight = await throughput(direct, last.dial);
  console.log(
    JSON.stringify({
      bench: "ingress_throughput",
      requests: REQUESTS,
      concurrency: CONCURRENCY,
      proxied_rps: Math.round(viaProxy),
      direct_rps: Math.round(straight),
      ratio: Number((viaProxy / straight).toFixed(2)),
      goal_ratio: 0.8,
      loadavg: load(),
    }),
  );
  await proxied.close();
  await direct.close();
} finally {
  await backend.close();
  await rx.close();
  await setup.cleanup();
  await caddy.stop();
}
