/**
 * Test support: a real `fred devnet start` child process on a free loopback port, its keys,
 * and small JSON-RPC helpers. Every process and temp dir is cleaned up by `stop()`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { ReconnectingSocket } from "@cosmjs/socket";

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
  proc: ChildProcess;
  stderr(): string;
  account(name: string): DevnetKeys["accounts"][number];
  /** Restarts on the same home (after stop or kill) and returns the new process. */
  restart(extra?: string[]): Promise<DevnetProcess>;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

const BIN = join(import.meta.dirname, "..", "..", "bin", "fred.js");

export function runFred(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

function exited(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => proc.once("exit", () => resolve()));
}

async function launch(home: string, args: string[], ownsHome: boolean): Promise<DevnetProcess> {
  // FRED_DEVNET_NODE_ARGS passes extra Node flags to the node process (e.g. --cpu-prof for profiling).
  const nodeArgs = (process.env.FRED_DEVNET_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
  const proc = spawn(
    process.execPath,
    [...nodeArgs, BIN, "devnet", "start", "--home", home, "--rpc-port", "0", ...args],
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, FRED_LOG_LEVEL: process.env.FRED_LOG_LEVEL ?? "warn" },
    },
  );
  let errText = "";
  proc.stderr?.on("data", (d) => {
    errText += d;
    if (errText.length > 200_000) errText = errText.slice(-100_000);
  });
  const lines = createInterface({ input: proc.stdout as NodeJS.ReadableStream });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    proc.once("exit", (code) => reject(new Error(`devnet exited (${code}) before it was ready: ${errText}`)));
  });
  const ready = JSON.parse(first) as { rpc: string; chain_id: string; height: number };
  const keys = JSON.parse(readFileSync(join(home, "keys.json"), "utf8")) as DevnetKeys;
  const self: DevnetProcess = {
    url: ready.rpc,
    wsUrl: ready.rpc.replace(/^http/, "ws"),
    home,
    keys,
    proc,
    stderr: () => errText,
    account(name) {
      const a = keys.accounts.find((x) => x.name === name);
      if (!a) throw new Error(`no dev account ${name}`);
      return a;
    },
    restart: (extra = args) => launch(home, extra, ownsHome),
    async kill9() {
      proc.kill("SIGKILL");
      await exited(proc);
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGTERM");
        await exited(proc);
      }
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

/** Polls `probe` until it returns a value other than undefined, or fails after `ms`. */
export async function waitFor<T>(probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error("condition not met before the deadline");
    await new Promise((r) => setTimeout(r, 50));
  }
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
