/**
 * Runs a real `fred devnet start` child process for chain-client tests: a fresh home in a
 * temp dir, a free port, and clean shutdown (SIGTERM, then SIGKILL after a deadline).
 * `restart()` starts the same home on the same port again (kill/restart fault tests).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FRED_BIN, runFred } from "../../cli/run-cli.ts";

export interface DevnetKeys {
  chain_id: string;
  provider_uuid: string;
  accounts: { name: string; address: string; mnemonic: string; private_key_hex: string }[];
  skus: { uuid: string; name: string; billing_only: boolean }[];
}

export interface DevnetProcess {
  home: string;
  rpc: string;
  port: number;
  keys: DevnetKeys;
  account(name: string): DevnetKeys["accounts"][number];
  call(method: string, params?: Record<string, unknown>): Promise<unknown>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function startChild(args: string[]): Promise<{ child: ChildProcess; ready: { rpc: string } }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FRED_BIN, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, FRED_LOG_LEVEL: process.env.FRED_LOG_LEVEL ?? "warn" },
    });
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`devnet did not start in time: ${err}`));
    }, 60_000);
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      err = (err + d).slice(-4000);
    });
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      const nl = out.indexOf("\n");
      if (nl >= 0) {
        clearTimeout(timer);
        resolve({ child, ready: JSON.parse(out.slice(0, nl)) });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`devnet exited (${code}) before ready: ${err}`));
    });
  });
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    child.once("exit", () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

export async function startDevnetProcess(
  opts: { blockTime?: string; tenants?: number; profile?: string } = {},
): Promise<DevnetProcess> {
  const home = await mkdtemp(join(tmpdir(), "fred-chain-devnet-"));
  const initArgs = [
    "--home",
    home,
    "--tenants",
    String(opts.tenants ?? 2),
    "--profile",
    opts.profile ?? "default",
  ];
  const init = await runFred(["devnet", "init", ...initArgs]);
  if (init.code !== 0) throw new Error(`devnet init failed: ${init.stderr}`);
  const keysOut = await runFred(["devnet", "keys", "--home", home]);
  const keys = JSON.parse(keysOut.stdout) as DevnetKeys;
  const blockTime = opts.blockTime ?? "200ms";
  let started = await startChild([
    "devnet",
    "start",
    ...initArgs,
    "--rpc-port",
    "0",
    "--block-time",
    blockTime,
  ]);
  const port = Number(new URL(started.ready.rpc).port);
  const proc: DevnetProcess = {
    home,
    rpc: started.ready.rpc,
    port,
    keys,
    account(name) {
      const a = keys.accounts.find((x) => x.name === name);
      if (a === undefined) throw new Error(`no dev account ${name}`);
      return a;
    },
    async call(method, params = {}) {
      const res = await fetch(proc.rpc, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      const body = (await res.json()) as { result?: unknown; error?: unknown };
      if (body.error !== undefined) throw new Error(JSON.stringify(body.error));
      return body.result;
    },
    async kill(signal = "SIGKILL") {
      started.child.kill(signal);
      await waitExit(started.child, 10_000);
    },
    async restart() {
      await proc.kill("SIGTERM");
      started = await startChild([
        "devnet",
        "start",
        ...initArgs,
        "--rpc-port",
        String(port),
        "--block-time",
        blockTime,
      ]);
    },
    async stop() {
      started.child.kill("SIGTERM");
      if (!(await waitExit(started.child, 10_000))) {
        started.child.kill("SIGKILL");
        await waitExit(started.child, 5_000);
      }
      await rm(home, { recursive: true, force: true });
    },
  };
  return proc;
}
