import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { DockerBackendConfig } from "../../../../src/backend/docker/config.ts";
import { Ingress } from "../../../../src/backend/docker/ingress/index.ts";
import { systemClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";
import { pickFreePort, until } from "../../../support/index.ts";

/**
 * A real Caddy (Debian's package) per test file: admin API on a loopback port, its data
 * (the internal CA, certificates) in a temp dir, started with nothing but the admin
 * listener, as a freshly installed proxy is. `restart` kills it and starts it from that
 * same empty config: whatever the backend wrote is gone, as after a real restart.
 */
export interface TestCaddy {
  adminUrl: string;
  dataDir: string;
  /** The root certificate of the backend's own internal CA (`fred_<backend name>`). */
  caCert(backendName: string): Buffer;
  restart(): Promise<void>;
  /** Kills the process and keeps its data dir (`restart` brings it back). */
  kill(): Promise<void>;
  stop(): Promise<void>;
  /** GET /config/<path> from the admin API. */
  config(path?: string): Promise<unknown>;
}

export async function startCaddy(boot: Record<string, unknown> = {}): Promise<TestCaddy> {
  const dir = mkdtempSync(join(tmpdir(), "fred-caddy-test-"));
  const port = await pickFreePort();
  const adminUrl = `http://127.0.0.1:${port}`;
  const configFile = join(dir, "boot.json");
  writeFileSync(configFile, JSON.stringify({ admin: { listen: `127.0.0.1:${port}` }, ...boot }));
  let child: ChildProcess | undefined;
  let log = "";
  const config = async (path = "") => {
    const res = await fetch(`${adminUrl}/config/${path}`);
    return res.json();
  };
  const start = async () => {
    child = spawn("caddy", ["run", "--config", configFile], {
      env: { PATH: process.env.PATH ?? "", HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr?.on("data", (b: Buffer) => {
      log = (log + b.toString()).slice(-20_000);
    });
    await until(
      async () => {
        if (child?.exitCode !== null) throw new Error(`caddy exited: ${log.slice(-2000)}`);
        return fetch(`${adminUrl}/config/`).then(
          (r) => r.ok,
          () => false,
        );
      },
      "caddy admin API",
      { timeoutMs: 20_000 },
    );
  };
  const stop = async () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return; // already gone
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    adminUrl,
    dataDir: dir,
    caCert: (backendName) =>
      readFileSync(join(dir, "caddy", "pki", "authorities", `fred_${backendName}`, "root.crt")),
    async restart() {
      await stop();
      await start();
    },
    kill: stop,
    async stop() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    config,
  };
}

export interface HttpsAnswer {
  status: number;
  body: string;
}

/**
 * GET https://<host>:<port>/ with `host` resolved to 127.0.0.1 (curl's --resolve), trusting
 * only `ca`. Resolves with the answer, or with `{status: 0, body: <error code>}` when the
 * TLS handshake or the connection fails.
 */
export async function httpsGet(host: string, port: number, ca: Buffer, path = "/"): Promise<HttpsAnswer> {
  // Caddy stamps a certificate it has just issued as valid from the current second, and this
  // VM's wall clock can step back ~100 ms: a handshake right after issuance may see it "not
  // yet valid". That is the clock, not the route under test, so such a handshake is tried
  // again (at most twice, half a second apart); every other answer is returned as it is.
  let answer = await httpsGetOnce(host, port, ca, path);
  for (let retry = 0; retry < 2 && answer.body === "CERT_NOT_YET_VALID"; retry++) {
    await sleep(500);
    answer = await httpsGetOnce(host, port, ca, path);
  }
  return answer;
}

/**
 * Waits for the first 200 from https://<host><path> (at most 15 s) and resolves with it. A
 * lease is ready once its containers run; the program inside may bind its port a moment
 * later, and Caddy answers 502 until it does. Use it where the route is expected to work;
 * assert refusals with `httpsGet`.
 */
export async function httpsServed(host: string, port: number, ca: Buffer, path = "/"): Promise<HttpsAnswer> {
  let last: HttpsAnswer | undefined;
  return until(
    async () => {
      last = await httpsGet(host, port, ca, path);
      return last.status === 200 && last;
    },
    `https://${host}${path} answering 200 through Caddy`,
    { timeoutMs: 15_000, intervalMs: 100, context: () => `last answer: ${JSON.stringify(last)}` },
  );
}

function httpsGetOnce(host: string, port: number, ca: Buffer, path: string): Promise<HttpsAnswer> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        servername: host,
        headers: { host },
        ca,
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (err: NodeJS.ErrnoException) => resolve({ status: 0, body: err.code ?? err.message }));
    req.end();
  });
}

/** An Ingress for `config`, started and active (as a backend has it once running), logging nothing. */
export async function activeIngress(
  config: NonNullable<DockerBackendConfig["ingress"]>,
  backendName: string,
): Promise<Ingress> {
  const ingress = new Ingress({
    config,
    backendName,
    clock: systemClock,
    log: createLogger("test", "silent"),
  });
  await ingress.start();
  await ingress.activate();
  return ingress;
}
