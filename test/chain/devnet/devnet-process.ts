/**
 * Runs a real `fred devnet start` child process for chain-client tests: a fresh home in a
 * temp dir, a free port, and clean shutdown (SIGTERM, then SIGKILL after a deadline).
 * `restart()` starts the same home on the same port again (kill/restart fault tests).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Launched, launchFred, portOf, runFred } from "../../support/index.ts";

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
  kill(signal?: "SIGKILL" | "SIGTERM"): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function startChild(args: string[]): Promise<Launched<{ rpc: string }>> {
  return launchFred<{ rpc: string }>(args, {
    label: "devnet",
    env: { FRED_LOG_LEVEL: process.env.FRED_LOG_LEVEL ?? "warn" },
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
  const port = portOf(started.ready.rpc);
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
      if (signal === "SIGKILL") await started.kill();
      else await started.stop();
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
      await started.stop();
      await rm(home, { recursive: true, force: true });
    },
  };
  return proc;
}
