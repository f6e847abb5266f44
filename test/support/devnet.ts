/**
 * The one devnet of the tests: a real `fred devnet start` child on a free loopback port,
 * on a fresh temp home unless the caller brings one. `start` initialises the home itself (with `tenants` and `profile`),
 * so a test never runs `devnet init` first unless init is what it tests. Disposing the
 * handle stops the child and removes a home it made: `await using dn = await devnet()` in a
 * test, or `await dn?.stop()` in an `after` hook when several tests share one.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Launched, launchFred } from "./process.ts";

export interface DevnetKeys {
  chain_id: string;
  /** The PWR denom chosen at init (absent in homes made before `--pwr-denom`: "upwr"). */
  pwr_denom?: string;
  authority?: string;
  provider_uuid: string;
  accounts: { name: string; address: string; mnemonic: string; private_key_hex: string }[];
  skus: { uuid: string; name: string; billing_only: boolean }[];
}

export interface DevnetOptions {
  /** Time between blocks (default "0s": a block as soon as a tx arrives). */
  blockTime?: string;
  /** Tenant dev accounts of a new home (the CLI's default is 2). */
  tenants?: number;
  /** Genesis profile of a new home (the CLI's default is "default"). */
  profile?: string;
  /** Further `fred devnet start` flags, e.g. `["--history-blocks", "3"]`. */
  args?: string[];
  /** Deadline for the ready line (default 60 s; more when it starts beside other processes). */
  readyTimeoutMs?: number;
  /** A home the caller owns (kept on stop); by default a fresh temp dir, removed on stop. */
  home?: string;
  /** Node flags for the devnet process (e.g. a CPU profile), besides FRED_DEVNET_NODE_ARGS. */
  nodeFlags?: string[];
}

interface Ready {
  rpc: string;
  chain_id: string;
  height: number;
}

export interface Devnet extends AsyncDisposable {
  readonly home: string;
  /** `http://127.0.0.1:<port>`: the same across restarts, so clients can reconnect. */
  readonly rpc: string;
  readonly wsUrl: string;
  readonly port: number;
  readonly keys: DevnetKeys;
  /** The child running now (a restart replaces it). */
  readonly proc: Launched<Ready>;
  stderr(): string;
  account(name: string): DevnetKeys["accounts"][number];
  /** A JSON-RPC call; a JSON-RPC error is thrown. */
  call(method: string, params?: Record<string, unknown>): Promise<unknown>;
  /** SIGKILL (a crash); the home is kept for `restart`. */
  kill(): Promise<void>;
  /**
   * Stops the child if it runs, then starts the same home on the same port: `args` replace
   * the start flags, `env` is added to this start's environment (e.g. POA_ADMIN_ADDRESS,
   * which the node reads at start).
   */
  restart(opts?: { args?: string[]; env?: Record<string, string> }): Promise<void>;
  /** Stops the child and removes a home it made; safe to call twice. */
  stop(): Promise<void>;
}

export async function devnet(opts: DevnetOptions = {}): Promise<Devnet> {
  const ownsHome = opts.home === undefined;
  const home = opts.home ?? (await mkdtemp(join(tmpdir(), "fred-devnet-test-")));
  const removeHome = () => (ownsHome ? rm(home, { recursive: true, force: true }) : Promise.resolve());
  const init = [
    ...(opts.tenants === undefined ? [] : ["--tenants", String(opts.tenants)]),
    ...(opts.profile === undefined ? [] : ["--profile", opts.profile]),
  ];
  let flags = ["--block-time", opts.blockTime ?? "0s", ...(opts.args ?? [])];
  const start = (port: number, env: Record<string, string> = {}) =>
    launchFred<Ready>(["devnet", "start", "--home", home, "--rpc-port", String(port), ...init, ...flags], {
      label: "devnet",
      ...(opts.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: opts.readyTimeoutMs }),
      // Extra Node flags for the node process, e.g. --cpu-prof when profiling a suite.
      nodeFlags: [
        ...(process.env.FRED_DEVNET_NODE_ARGS ?? "").split(" ").filter((a) => a !== ""),
        ...(opts.nodeFlags ?? []),
      ],
      env: { FRED_LOG_LEVEL: process.env.FRED_LOG_LEVEL ?? "warn", ...env },
    });
  let proc: Launched<Ready> | undefined;
  let keys: DevnetKeys;
  try {
    proc = await start(0);
    // Written by the start that initialised the home, before its ready line.
    keys = JSON.parse(await readFile(join(home, "keys.json"), "utf8")) as DevnetKeys;
  } catch (err) {
    await proc?.stop();
    await removeHome();
    throw err;
  }
  let running: Launched<Ready> = proc;
  const rpc = running.ready.rpc;
  const port = Number(new URL(rpc).port);
  let nextId = 1;
  let stopped = false;
  const handle: Devnet = {
    home,
    rpc,
    wsUrl: rpc.replace(/^http/, "ws"),
    port,
    keys,
    get proc() {
      return running;
    },
    stderr: () => running.stderr(),
    account(name) {
      const a = keys.accounts.find((x) => x.name === name);
      if (a === undefined) throw new Error(`no dev account ${name}`);
      return a;
    },
    async call(method, params = {}) {
      const res = await fetch(rpc, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
      });
      const body = (await res.json()) as { result?: unknown; error?: unknown };
      if (body.error !== undefined) throw new Error(JSON.stringify(body.error));
      return body.result;
    },
    async kill() {
      await running.kill();
    },
    async restart({ args = flags, env } = {}) {
      await running.stop();
      flags = args;
      running = await start(port, env);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await running.stop();
      await removeHome();
    },
    [Symbol.asyncDispose]: () => handle.stop(),
  };
  return handle;
}
