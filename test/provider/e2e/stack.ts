import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { type CosmosChain, openCosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../../../src/chain/cosmos/signer.ts";
import { Keyring } from "../../../src/chain/keyring/index.ts";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../../src/chain/proto/index.ts";
import {
  type Devnet,
  type DevnetKeys,
  devnet,
  type Launched,
  type LaunchOptions,
  launchFred,
  portOf,
  runFred,
  until,
} from "../../support/index.ts";
import { startPostgres, type TestPostgres } from "../../support/postgres.ts";

/**
 * A real local stack for providerd end-to-end tests: a devnet process, mock backend
 * processes, the provider's keyring, a providerd config and its placement store, and
 * providerd itself as a child process that tests can stop, kill -9 and restart.
 */
export const SECRETS = [
  "e2e-mock-one-secret-0123456789abcdef",
  "e2e-mock-two-secret-0123456789abcdef",
  "e2e-mock-three-secret-0123456789abcdef",
];
export const SIDS = [
  "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b",
  "6d1f3a2b-4c5e-4f70-9bac-1d2e3f4a5b6c",
  "7e2a4b3c-5d6f-4a81-8cbd-2e3f4a5b6c7d",
];

export interface MockReady {
  url: string;
  storage_id: string;
}

/**
 * `FRED_PROFILE_DIR=<dir>` makes every process of the stack write a V8 CPU profile into
 * `<dir>/<role>` when it exits (open the .cpuprofile files in Chrome DevTools).
 */
function profile(role: string): Pick<LaunchOptions<unknown>, "nodeFlags"> {
  const dir = process.env.FRED_PROFILE_DIR;
  const flags = dir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${join(dir, role)}`];
  // FRED_NODE_FLAGS_PROVIDERD="--max-semi-space-size=4 …": V8 flags for one role (memory experiments).
  const extra = process.env[`FRED_NODE_FLAGS_${role.replace(/\W/g, "_").toUpperCase()}`];
  if (extra !== undefined) flags.push(...extra.split(" ").filter((f) => f !== ""));
  return flags.length === 0 ? {} : { nodeFlags: flags };
}

/**
 * `FRED_ENV_PROVIDERD="GLIBC_TUNABLES=… K=V"`: environment for one role, as its own unit
 * sets it (scripts/run-bench.mjs passes providerd's), or for memory experiments.
 */
function roleEnv(role: string): Record<string, string> {
  const spec = process.env[`FRED_ENV_${role.replace(/\W/g, "_").toUpperCase()}`] ?? "";
  const pairs = spec.split(" ").filter((kv) => kv.includes("="));
  return Object.fromEntries(pairs.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
}

/** `fred placement migrate --to <url>`: the stores of a stopped provider's config into PostgreSQL. */
export async function migrateStores(configPath: string, url: string): Promise<void> {
  const moved = await runFred(["placement", "migrate", "--config", configPath, "--to", url]);
  if (moved.code !== 0) throw new Error(`placement migrate failed: ${moved.stderr}`);
}

/** Leases per create tx in createLeasesFor (a block takes a few hundred easily). */
const LEASES_PER_TX = 100;

/** A stack process: ready when it prints its JSON line (within 120 s on a busy machine). */
function start<T>(role: string, args: string[], env: Record<string, string | undefined> = {}) {
  return launchFred<T>(args, {
    label: role,
    env: { ...roleEnv(role), ...env },
    readyTimeoutMs: 120_000,
    ...profile(role),
  });
}

export interface BackendOverrides {
  draining?: boolean;
  fenced?: boolean;
  skus?: string[];
  /** backends[].timeout (a duration such as "3s"). */
  timeout?: string;
  /** backends[].hmac_secret and hmac_secret_previous (a key rotation); SECRETS[i] by default. */
  hmacSecret?: string;
  hmacSecretPrevious?: string;
}

export class Stack {
  readonly dir = mkdtempSync(join(tmpdir(), "fred-providerd-e2e-"));
  devnet!: Devnet;
  mocks: Launched<MockReady>[] = [];
  keys!: DevnetKeys;
  tenant!: CosmosChain;
  providerd: Launched<{ url: string; operator_url?: string }> | undefined;
  /** providerd's URL from its first ready line ("" before): its port is kept for restarts. */
  apiUrl = "";
  configPath = "";
  readonly payloadPath = join(this.dir, "payloads.db");
  readonly placementPath = join(this.dir, "placements.db");

  /** Backend flags used by writeConfig (tests change them, then restart providerd). */
  backendOverrides: BackendOverrides[] = [];
  mockEnvs: Record<string, string>[] = [];
  extraConfig: Record<string, unknown> = {};
  /** The PostgreSQL cluster holding the stores after moveToPostgres (undefined: SQLite files). */
  postgres: TestPostgres | undefined;

  /**
   * `mockEnv` gives each mock backend's extra environment (one entry per backend);
   * `configure` sets backendOverrides / extraConfig once the devnet's SKUs are known (it
   * may start other backends first, e.g. a Docker backend, and name them in extraConfig).
   */
  async start(
    mockEnv: (stack: Stack) => Record<string, string>[] = () => [{}, {}],
    configure: (stack: Stack) => void | Promise<void> = () => {},
    devnetArgs: string[] = [],
  ): Promise<void> {
    this.devnet = await devnet({
      home: join(this.dir, "devnet"),
      args: devnetArgs,
      readyTimeoutMs: 120_000,
      ...profile("devnet"),
    });
    this.keys = this.devnet.keys;
    this.mockEnvs = mockEnv(this).map((extra, i) => ({
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_STORAGE_ID: SIDS[i]!,
      MOCK_BACKEND_CALLBACK_SECRET: SECRETS[i]!,
      MOCK_BACKEND_NAME: `mock-${i + 1}`,
      MOCK_BACKEND_DB_PATH: join(this.dir, `mock-${i + 1}.db`),
      ...extra,
    }));
    this.mocks = await Promise.all(
      this.mockEnvs.map((env, i) => start<MockReady>(`mock-${i + 1}`, ["backend", "mock"], env)),
    );
    const provider = this.account("provider");
    await new Keyring({ dir: join(this.dir, "keyring"), backend: "test" }).add("provider", provider.mnemonic);
    this.tenant = await openCosmosChain({
      rpcUrl: this.devnet.rpc,
      signer: signerFromKey(Buffer.from(this.account("tenant1").private_key_hex, "hex")),
      txPollIntervalMs: 50,
      txTimeoutMs: 20_000,
    });
    await configure(this);
    this.writeConfig();
    const init = await runFred(["placement", "init", "--config", this.configPath]);
    if (init.code !== 0) throw new Error(`placement init failed: ${init.stderr}`);
  }

  account(name: string) {
    const a = this.keys.accounts.find((x) => x.name === name);
    if (a === undefined) throw new Error(`no devnet account ${name}`);
    return a;
  }

  sku(name: string): string {
    const s = this.keys.skus.find((x) => x.name === name);
    if (s === undefined) throw new Error(`no devnet sku ${name} (have ${this.keys.skus.map((k) => k.name)})`);
    return s.uuid;
  }

  writeConfig(overrides: BackendOverrides[] = this.backendOverrides, extra = this.extraConfig): void {
    this.configPath = join(this.dir, "providerd.yaml");
    const config = {
      provider_uuid: this.keys.provider_uuid,
      provider_address: this.account("provider").address,
      chain_id: this.keys.chain_id,
      keyring_dir: join(this.dir, "keyring"),
      keyring_backend: "test",
      key_name: "provider",
      websocket_url: `${this.devnet.wsUrl}/websocket`,
      // Port 0 until the first start: providerd derives its callback base from what it binds.
      api_listen_addr: `127.0.0.1:${this.apiUrl === "" ? 0 : portOf(this.apiUrl)}`,
      ...(this.apiUrl === "" ? {} : { callback_base_url: this.apiUrl }),
      placement_store_db_path: this.placementPath,
      payload_store_db_path: this.payloadPath,
      // The dashboard's listener on a free port: stacks run side by side, 8081 is one port.
      operator_listen_addr: "127.0.0.1:0",
      provision_callback_timeout: "20s",
      shutdown_timeout: "5s",
      // Tests poll and probe far faster than any client should: the listener's budgets are
      // raised here (suites about the limits set their own through extraConfig).
      rate_limit_rps: 1_000,
      rate_limit_burst: 2_000,
      tenant_rate_limit_rps: 1_000,
      tenant_rate_limit_burst: 2_000,
      backends: this.mocks.map((m, i) => ({
        name: `mock-${i + 1}`,
        url: m.ready.url,
        hmac_secret: overrides[i]?.hmacSecret ?? SECRETS[i],
        ...(overrides[i]?.hmacSecretPrevious === undefined
          ? {}
          : { hmac_secret_previous: overrides[i]!.hmacSecretPrevious }),
        default: i === 0,
        ...(overrides[i]?.draining ? { draining: true } : {}),
        ...(overrides[i]?.fenced ? { fenced: true } : {}),
        ...(overrides[i]?.skus === undefined ? {} : { skus: overrides[i]!.skus }),
        ...(overrides[i]?.timeout === undefined ? {} : { timeout: overrides[i]!.timeout }),
      })),
      ...extra,
    };
    writeFileSync(this.configPath, stringify(config));
  }

  /** The operator dashboard's URL of the running providerd (its port changes at each start). */
  get operator(): string {
    const url = this.providerd?.ready.operator_url;
    if (url === undefined) throw new Error("providerd runs without the operator listener");
    return url;
  }

  get api(): string {
    if (this.apiUrl === "") throw new Error("providerd has not started yet: no API URL");
    return this.apiUrl;
  }

  /**
   * A `MOCK_BACKEND_ADDR` for mock `i` on a Unix socket in the stack's directory (give it in
   * `mockEnv`): its ready line then says `unix:/…`, which is what providerd's config gets.
   */
  mockSocket(i: number): string {
    return `unix:${join(this.dir, `mock-${i + 1}.sock`)}`;
  }

  /** Stops mock `i`; `restartMock` brings it back on the same port (or socket) with the same journal. */
  async stopMock(i: number): Promise<void> {
    await this.mocks[i]!.stop();
  }

  async restartMock(i: number): Promise<void> {
    const url = this.mocks[i]!.ready.url;
    this.mocks[i] = await start<MockReady>(`mock-${i + 1}`, ["backend", "mock"], {
      ...this.mockEnvs[i]!,
      MOCK_BACKEND_ADDR: url.startsWith("unix:") ? url : `127.0.0.1:${new URL(url).port}`,
    });
  }

  /**
   * Starts providerd and returns once its API listens (not necessarily ready). `env` adds
   * to its environment for this run only (e.g. `FRED_FAILPOINTS`).
   */
  async launchProviderd(env: Record<string, string> = {}): Promise<void> {
    this.providerd = await start<{ url: string; operator_url?: string }>(
      "providerd",
      ["providerd", "-c", this.configPath],
      {
        FRED_LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? "warn",
        ...env,
      },
    );
    if (this.apiUrl === "") {
      // The first start bound a free port; restarts keep it, so callbacks a backend still
      // holds for the earlier process reach the next one, as on a real host.
      this.apiUrl = this.providerd.ready.url;
      this.writeConfig();
    }
  }

  /**
   * launchProviderd, then waits for /readyz 200 as the leader. On PostgreSQL an instance
   * serves as a standby (ready too) until it leads: this waits until the daemon answers.
   */
  async startProviderd(env: Record<string, string> = {}): Promise<void> {
    await this.launchProviderd(env);
    await until(
      async () => {
        const res = await fetch(`${this.api}/readyz`, { signal: AbortSignal.timeout(3_000) }).catch(
          () => undefined,
        );
        if (res?.status !== 200) return false;
        return ((await res.json()) as { role?: string }).role !== "standby";
      },
      "providerd /readyz 200 as the leader",
      { timeoutMs: 120_000, intervalMs: 100, context: () => this.providerd?.logTail() ?? "" },
    );
  }

  /**
   * Moves the stores into a PostgreSQL cluster of its own (`fred placement migrate`, issue
   * #36) and rewrites the config: `database_url` and `state_dir` instead of the SQLite paths.
   * Call before providerd first starts; close() stops the cluster.
   */
  async moveToPostgres(database = "providerd"): Promise<string> {
    this.postgres = await startPostgres();
    const url = this.postgres.createDatabase(database);
    await migrateStores(this.configPath, url);
    // yaml leaves out undefined keys: the SQLite store paths go.
    this.extraConfig = {
      ...this.extraConfig,
      placement_store_db_path: undefined,
      payload_store_db_path: undefined,
      database_url: url,
      state_dir: this.dir,
    };
    this.writeConfig();
    return url;
  }

  /**
   * Waits (with a deadline) for providerd to exit by itself, as it does when an armed crash
   * point fires, and tells how it ended. The child is forgotten once it has exited; on a
   * timeout it is left running for close() to stop.
   */
  async waitProviderdExit(
    timeoutMs = 30_000,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const p = this.providerd;
    if (p === undefined) throw new Error("providerd is not running");
    const exit = await p.waitExit(timeoutMs);
    this.providerd = undefined;
    return exit;
  }

  /** SIGTERM (SIGKILL after 10 s); returns the exit code, null when it had to be killed. */
  async stopProviderd(): Promise<number | null> {
    const exit = await this.providerd?.stop();
    this.providerd = undefined;
    return exit?.code ?? null;
  }

  async killProviderd(): Promise<void> {
    await this.providerd?.kill();
    this.providerd = undefined;
  }

  /** Creates single-item leases for tenant1 in one tx; `metaHash` makes them payload leases. */
  async createLeases(n: number, skuName: string, metaHash = new Uint8Array()): Promise<string[]> {
    const skuUuid = this.sku(skuName);
    const msgs = Array.from({ length: n }, () => ({
      typeUrl: MsgCreateLease.typeUrl,
      value: MsgCreateLease.fromPartial({
        tenant: this.tenant.address,
        items: [{ skuUuid, quantity: 1n }],
        metaHash,
      }),
    }));
    const res = await this.tenant.send(msgs);
    return res.msgResponses.map((a) => MsgCreateLeaseResponse.decode(a.value).leaseUuid);
  }

  /**
   * Creates `n` single-item leases for dev account `account` (tenant1, tenant2, … of the
   * genesis), 100 per tx, each tx waiting for its block; `afterTx` runs after each with the
   * leases created so far. The bench genesis (`--profile bench`) lets a tenant hold 1,000
   * PENDING; the default one, 10.
   */
  async createLeasesFor(
    account: string,
    n: number,
    skuName: string,
    afterTx: (created: number) => void | Promise<void> = () => {},
  ): Promise<string[]> {
    const skuUuid = this.sku(skuName);
    const chain =
      account === "tenant1"
        ? this.tenant
        : await openCosmosChain({
            rpcUrl: this.devnet.rpc,
            signer: signerFromKey(Buffer.from(this.account(account).private_key_hex, "hex")),
            txPollIntervalMs: 100,
            txTimeoutMs: 120_000,
          });
    const uuids: string[] = [];
    try {
      for (let done = 0; done < n; done += LEASES_PER_TX) {
        const msgs = Array.from({ length: Math.min(LEASES_PER_TX, n - done) }, () => ({
          typeUrl: MsgCreateLease.typeUrl,
          value: MsgCreateLease.fromPartial({ tenant: chain.address, items: [{ skuUuid, quantity: 1n }] }),
        }));
        const res = await chain.send(msgs);
        for (const r of res.msgResponses) uuids.push(MsgCreateLeaseResponse.decode(r.value).leaseUuid);
        await afterTx(uuids.length);
      }
    } finally {
      if (chain !== this.tenant) chain.disconnect();
    }
    return uuids;
  }

  async leaseState(uuid: string): Promise<string | undefined> {
    return (await this.tenant.getLease(uuid))?.state;
  }

  async waitState(uuids: readonly string[], state: string, timeoutMs = 30_000): Promise<void> {
    let states: (string | undefined)[] = [];
    await until(
      async () => {
        states = await Promise.all(uuids.map((u) => this.leaseState(u)));
        return states.every((s) => s === state);
      },
      `${uuids.length} lease(s) ${state}`,
      {
        timeoutMs,
        intervalMs: 100,
        context: () =>
          `states: ${states.join(", ")}\n${this.providerd?.logTail() ?? "providerd is not running"}`,
      },
    );
  }

  /** GET /workloads, as one row per lease found (in the order asked), with the backend that reported it. */
  async workloads(
    uuids: readonly string[],
  ): Promise<{ lease_uuid: string; backend: string; status: string }[]> {
    const q = uuids.map((u) => `lease_uuid=${u}`).join("&");
    const res = await fetch(`${this.api}/workloads?${q}`);
    if (res.status !== 200) throw new Error(`/workloads answered ${res.status}`);
    const { workloads } = (await res.json()) as {
      workloads: Record<string, { backend_name: string; status: string }>;
    };
    return [...new Set(uuids)].flatMap((lease) => {
      const w = workloads[lease];
      return w === undefined ? [] : [{ lease_uuid: lease, backend: w.backend_name, status: w.status }];
    });
  }

  async close(): Promise<void> {
    this.tenant?.disconnect();
    await this.providerd?.stop();
    await Promise.all([this.devnet?.stop(), ...this.mocks.map((m) => m.stop())]);
    this.postgres?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** MOCK_BACKEND_SKUS value serving exactly these SKU UUIDs. */
export function mockSkus(...uuids: string[]): string {
  return JSON.stringify(Object.fromEntries(uuids.map((u) => [u, SKU_RESOURCES])));
}
const SKU_RESOURCES = { cpu_cores: 0.5, memory_mb: 512, disk_mb: 1024 };

export function sha256(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash("sha256").update(bytes).digest());
}
