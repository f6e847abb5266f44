import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { retry } from "../../core/async/index.ts";
import { systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";

/**
 * The ingress proxy inside `fred up --docker` when Caddy is installed: its own `caddy run`
 * with the admin API on a free loopback port and its data (the internal CA the Docker
 * backend creates) under <home>/caddy/, so nothing outside the home is touched. The
 * backend then gives every web service an `https://<label>.fred.localhost` hostname, a name
 * that resolves to loopback by definition (RFC 6761; curl knows it), on 127.0.0.1:443 when
 * that port can be bound, else on a free loopback port.
 */
export const INGRESS_DOMAIN = "fred.localhost";

export interface LocalCaddy {
  adminUrl: string;
  httpsListen: string;
  /** The root certificate of the backend's internal CA, once the backend has made it. */
  caFile(backendName: string): string;
  stop(): Promise<void>;
}

export function hasCaddy(): boolean {
  try {
    execFileSync("caddy", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function listenable(port: number): Promise<number | undefined> {
  return new Promise((done) => {
    const srv = createServer();
    srv.once("error", () => done(undefined));
    srv.listen(port, "127.0.0.1", () => {
      const bound = (srv.address() as { port: number }).port;
      srv.close(() => done(bound));
    });
  });
}

export async function startLocalCaddy(home: string): Promise<LocalCaddy> {
  const dir = resolve(home, "caddy");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const adminPort = await listenable(0);
  const httpsPort = (await listenable(443)) ?? (await listenable(0));
  if (adminPort === undefined || httpsPort === undefined)
    throw new FredError("ERR_USAGE", "fred up: no free loopback port for the ingress proxy");
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const boot = join(dir, "boot.json");
  writeFileSync(boot, JSON.stringify({ admin: { listen: `127.0.0.1:${adminPort}` } }));
  let log = "";
  const child: ChildProcess = spawn("caddy", ["run", "--config", boot], {
    env: { PATH: process.env.PATH ?? "", HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: ["ignore", "ignore", "pipe"],
  });
  child.stderr?.on("data", (b: Buffer) => {
    log = (log + b.toString()).slice(-4000);
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    await exited;
  };
  try {
    await retry(
      async () => {
        if (child.exitCode !== null) throw new FredError("ERR_USAGE", `caddy exited: ${log.slice(-1000)}`);
        const res = await fetch(`${adminUrl}/config/`);
        if (!res.ok)
          throw new FredError("ERR_USAGE", `caddy admin answered ${res.status}`, { retryable: true });
      },
      {
        clock: systemClock,
        attempts: 40,
        backoff: { initialMs: 100, maxMs: 500 },
        retryable: (err) => !(err instanceof FredError) || err.retryable,
      },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    adminUrl,
    httpsListen: `127.0.0.1:${httpsPort}`,
    caFile: (name) => join(dir, "caddy", "pki", "authorities", `fred_${name}`, "root.crt"),
    stop,
  };
}
