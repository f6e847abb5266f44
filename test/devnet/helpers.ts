/**
 * Test support: a real `fred devnet start` child process on a free loopback port, its keys,
 * and small JSON-RPC helpers. Every process and temp dir is cleaned up by `stop()`.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReconnectingSocket } from "@cosmjs/socket";
import { type Launched, launchFred } from "../support/index.ts";

export interface DevnetKeys {
  chain_id: string;
  provider_uuid: string;
  accounts: { name: string; address: string; mnemonic: string; private_key_hex: string }[];
  skus: { uuid: string; name: string; billing_only: boolean }[];
}

export interface DevnetProcess {
  url: string;
  wsUrl: string;
  home: string;
  keys: DevnetKeys;
  proc: Launched<{ rpc: string }>;
  stderr(): string;
  account(name: string): DevnetKeys["accounts"][number];
  /** Restarts on the same home (after stop or kill) and returns the new process. */
  restart(extra?: string[]): Promise<DevnetProcess>;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

interface Ready {
  rpc: string;
  chain_id: string;
  height: number;
}

async function launch(home: string, args: string[], ownsHome: boolean): Promise<DevnetProcess> {
  // FRED_DEVNET_NODE_ARGS passes extra Node flags to the node process (e.g. --cpu-prof for profiling).
  const nodeFlags = (process.env.FRED_DEVNET_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
  const proc = await launchFred<Ready>(["devnet", "start", "--home", home, "--rpc-port", "0", ...args], {
    label: "devnet",
    nodeFlags,
    env: { FRED_LOG_LEVEL: process.env.FRED_LOG_LEVEL ?? "warn" },
  });
  const keys = JSON.parse(readFileSync(join(home, "keys.json"), "utf8")) as DevnetKeys;
  const self: DevnetProcess = {
    url: proc.ready.rpc,
    wsUrl: proc.ready.rpc.replace(/^http/, "ws"),
    home,
    keys,
    proc,
    stderr: () => proc.stderr(),
    account(name) {
      const a = keys.accounts.find((x) => x.name === name);
      if (!a) throw new Error(`no dev account ${name}`);
      return a;
    },
    restart: (extra = args) => launch(home, extra, ownsHome),
    async kill9() {
      await proc.kill();
    },
    async stop() {
      await proc.stop();
      if (ownsHome) rmSync(home, { recursive: true, force: true });
    },
  };
  return self;
}

/** Starts a devnet on a fresh temp home. `args` go to `fred devnet start`. */
export function startDevnetProcess(args: string[] = ["--block-time", "0s"]): Promise<DevnetProcess> {
  const home = mkdtempSync(join(tmpdir(), "fred-devnet-test-"));
  return launch(home, args, true);
}

let nextId = 1;

// biome-ignore lint/suspicious/noExplicitAny: replies are arbitrary JSON, asserted field by field in tests.
export async function rpc(url: string, method: string, params: unknown = {}): Promise<any> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
  });
  return res.json();
}

/**
 * cosmjs 0.39's ReconnectingSocket schedules a reconnect whenever its socket reports
 * "disconnected", even after an explicit disconnect(); once the devnet is gone it retries
 * forever and the test process never exits. After disconnect() we make those retries no-ops.
 */
export function stopCosmjsReconnectsAfterDisconnect(): void {
  type Internals = { socket: { reconnect(): void }; reconnectTimeout: NodeJS.Timeout | null };
  const proto = ReconnectingSocket.prototype as unknown as { disconnect(): void; __fredPatched?: true };
  if (proto.__fredPatched) return;
  const original = proto.disconnect;
  proto.disconnect = function (this: Internals) {
    original.call(this);
    this.socket.reconnect = () => {};
    if (this.reconnectTimeout) clearTimeout(this.reconnectTimeout);
  };
  proto.__fredPatched = true;
}
