/**
 * `fred providerd --check-config --online`: before a start, proves that what a valid
 * config names is really there — the key unlocks, the node serves chain_id, the provider
 * and its SKUs are on chain as configured, every backend answers as the storage the
 * placement store pinned, the stores open. Each check yields one line saying what to fix,
 * so an operator sees every problem in one run instead of one per failed start. Every
 * network wait has its own deadline: a silent peer fails its check, it does not hang.
 */
import { existsSync } from "node:fs";
import pg from "pg";
import { type CosmosChain, openCosmosChain } from "../chain/cosmos/adapter.ts";
import { Keyring } from "../chain/keyring/index.ts";
import { withDeadline } from "../core/async/index.ts";
import type { Clock } from "../core/clock.ts";
import { FredError, isFredError } from "../core/errors.ts";
import { describePgError } from "../pg/open.ts";
import { readDatabasePassword } from "../pg/password.ts";
import { BackendClient } from "../provider/backend-client/index.ts";
import type { BackendConfig, ProviderConfig } from "../provider/config/index.ts";
import { PayloadStore, PlacementStore } from "../provider/store/index.ts";

export interface PreflightCheck {
  /** What was checked, e.g. "keyring", "chain", "backend mock-1". */
  check: string;
  ok: boolean;
  /** On success what was found; on failure what is wrong and what to change. */
  detail: string;
}

export interface PreflightReport {
  ok: boolean;
  checks: PreflightCheck[];
}

export interface PreflightOptions {
  env: Record<string, string | undefined>;
  clock: Clock;
  /** Deadline of each network wait (a chain query, a backend request). */
  timeoutMs: number;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export async function runPreflight(config: ProviderConfig, opts: PreflightOptions): Promise<PreflightReport> {
  const checks: PreflightCheck[] = [];
  const pass = (check: string, detail: string) => checks.push({ check, ok: true, detail });
  const fail = (check: string, detail: string) => checks.push({ check, ok: false, detail });
  const deadline: Deadline = (what, code, work) =>
    withDeadline(
      opts.clock,
      opts.timeoutMs,
      undefined,
      () => new FredError(code, `${what} did not answer within ${opts.timeoutMs} ms`, { retryable: true }),
      work,
    );

  const keyAddress = await checkKeyring(config, opts.env, pass, fail);

  const chain = await openCosmosChain({
    rpcUrl: config.rpcUrl,
    chainId: config.chainId,
    queryTimeoutMs: opts.timeoutMs,
    clock: opts.clock,
  });
  try {
    if (await checkChain(config, chain, deadline, pass, fail)) {
      await checkProvider(config, keyAddress, chain, deadline, pass, fail);
      await checkSkus(config, chain, deadline, pass, fail);
    } else {
      fail("provider", "not checked: the chain check failed (fix that first)");
      fail("skus", "not checked: the chain check failed (fix that first)");
    }
  } finally {
    chain.disconnect();
  }

  const pins =
    config.databaseUrl === undefined
      ? checkStores(config, pass, fail)
      : await checkDatabase(config, opts.env, opts.timeoutMs, pass, fail);
  // Side by side, so several silent backends cost one deadline, not one each; listed in config order.
  checks.push(
    ...(await Promise.all(config.backends.map((b) => checkBackend(config, b, pins, opts.clock, deadline)))),
  );

  return { ok: checks.every((c) => c.ok), checks };
}

type Note = (check: string, detail: string) => void;
type Deadline = <T>(
  what: string,
  code: "ERR_CHAIN_RPC_TIMEOUT" | "ERR_BACKEND_TIMEOUT",
  work: (signal: AbortSignal) => Promise<T>,
) => Promise<T>;

/** The provider key: it unlocks with the configured passphrase and is provider_address. */
async function checkKeyring(
  config: ProviderConfig,
  env: Record<string, string | undefined>,
  pass: Note,
  fail: Note,
): Promise<string | undefined> {
  const keyring = new Keyring({
    dir: config.keyringDir,
    backend: config.keyringBackend,
    passphrase: env.FRED_KEYRING_PASSPHRASE,
    prefix: config.bech32Prefix,
  });
  const where = `${config.keyringBackend} keyring in ${config.keyringDir}`;
  try {
    const key = await keyring.unlock(config.keyName);
    if (key.address !== config.providerAddress) {
      fail(
        "keyring",
        `key "${config.keyName}" is ${key.address}, but provider_address is ${config.providerAddress}: fix provider_address or key_name`,
      );
      return key.address;
    }
    pass("keyring", `key "${config.keyName}" unlocks (${key.address})`);
    return key.address;
  } catch (err) {
    const fix =
      err instanceof FredError && err.code === "ERR_KEYRING_PASSPHRASE"
        ? "set FRED_KEYRING_PASSPHRASE to the passphrase the key was added with"
        : err instanceof FredError && err.code === "ERR_KEY_NOT_FOUND"
          ? `fix key_name or keyring_dir, or add the key (fred keys add ${config.keyName} --keyring-dir ${config.keyringDir})`
          : "fix keyring_dir / keyring_backend / key_name";
    fail("keyring", `key "${config.keyName}" in the ${where} does not unlock (${message(err)}): ${fix}`);
    return undefined;
  }
}

/** The node at rpc_url answers, and serves chain_id. */
async function checkChain(
  config: ProviderConfig,
  chain: CosmosChain,
  deadline: Deadline,
  pass: Note,
  fail: Note,
): Promise<boolean> {
  let network: string;
  try {
    network = await deadline(`the node at ${config.rpcUrl}`, "ERR_CHAIN_RPC_TIMEOUT", (signal) =>
      chain.network(signal),
    );
  } catch (err) {
    fail(
      "chain",
      `no answer from ${config.rpcUrl} (${message(err)}): check rpc_url / websocket_url and that the node runs`,
    );
    return false;
  }
  if (network !== config.chainId) {
    fail(
      "chain",
      `the node at ${config.rpcUrl} serves ${network}, but chain_id is ${config.chainId}: fix chain_id or rpc_url`,
    );
    return false;
  }
  pass("chain", `${config.rpcUrl} serves ${network}`);
  return true;
}

/** The provider record for provider_uuid exists, is active, and is the configured key's. */
async function checkProvider(
  config: ProviderConfig,
  keyAddress: string | undefined,
  chain: CosmosChain,
  deadline: Deadline,
  pass: Note,
  fail: Note,
): Promise<void> {
  let record: Awaited<ReturnType<CosmosChain["providerRecord"]>>;
  try {
    record = await deadline("the provider query", "ERR_CHAIN_RPC_TIMEOUT", (signal) =>
      chain.providerRecord(config.providerUuid, signal),
    );
  } catch (err) {
    fail("provider", `reading provider ${config.providerUuid} failed: ${message(err)}`);
    return;
  }
  const address = keyAddress ?? config.providerAddress;
  if (record === undefined)
    fail(
      "provider",
      `no provider ${config.providerUuid} on ${config.chainId}: fix provider_uuid (fred chain provider show <uuid>) or register the provider`,
    );
  else if (record.address !== address)
    fail(
      "provider",
      `provider ${config.providerUuid} belongs to ${record.address}, not ${address}: fix provider_uuid or use that provider's key`,
    );
  else if (!record.active)
    fail(
      "provider",
      `provider ${config.providerUuid} is inactive on chain: the sku module authority must reactivate it`,
    );
  else
    pass(
      "provider",
      `${config.providerUuid} is registered to ${record.address} (api_url ${record.apiUrl || "unset"})`,
    );
}

/** Every SKU the config names exists, is active and belongs to provider_uuid. */
async function checkSkus(
  config: ProviderConfig,
  chain: CosmosChain,
  deadline: Deadline,
  pass: Note,
  fail: Note,
): Promise<void> {
  const named = new Map<string, string>();
  for (const b of config.backends) for (const sku of b.skus) named.set(sku, `backends "${b.name}".skus`);
  for (const sku of config.billingOnlySkus) named.set(sku, "billing_only_skus");
  let bad = 0;
  for (const [uuid, where] of named) {
    try {
      const sku = await deadline(`the SKU query for ${uuid}`, "ERR_CHAIN_RPC_TIMEOUT", (signal) =>
        chain.skuRecord(uuid, signal),
      );
      const problem =
        sku === undefined
          ? "does not exist on chain"
          : sku.providerUuid !== config.providerUuid
            ? `belongs to provider ${sku.providerUuid}`
            : sku.active
              ? undefined
              : `(${sku.name}) is inactive`;
      if (problem === undefined) continue;
      bad++;
      fail(
        `sku ${uuid}`,
        `SKU ${uuid} in ${where} ${problem}: remove it from ${where} (fred chain sku list --provider ${config.providerUuid})`,
      );
    } catch (err) {
      bad++;
      fail(`sku ${uuid}`, `reading SKU ${uuid} (${where}) failed: ${message(err)}`);
    }
  }
  if (bad === 0)
    pass("skus", `${named.size} configured SKU(s) exist, are active and belong to ${config.providerUuid}`);
}

/**
 * The placement store opens for provider_uuid as the daemon would (and is not an
 * unattested restored copy); the payload store opens or will be created. Returns the
 * pinned storage IDs, undefined without a store.
 */
function checkStores(
  config: ProviderConfig,
  pass: Note,
  fail: Note,
): ReadonlyMap<string, string> | undefined {
  let pins: ReadonlyMap<string, string> | undefined;
  const path = config.placementStoreDbPath;
  if (!existsSync(path)) {
    fail(
      "placement store",
      `${path} does not exist: start the backends, then run fred placement init --config <this file>`,
    );
  } else {
    try {
      using store = PlacementStore.open(path, config.providerUuid, { readonly: true });
      const copiedAt = store.copies.takenAt();
      if (copiedAt !== undefined)
        fail(
          "placement store",
          `${path} is a copy taken at ${new Date(copiedAt).toISOString()}: attest it first (fred placement repair --config <file> --attest-restored-backup --apply)`,
        );
      else pass("placement store", `${path} opens (${store.fleet.backends().length} pinned backend(s))`);
      pins = store.fleet.pins();
    } catch (err) {
      fail("placement store", `${path} does not open: ${message(err)}`);
    }
  }
  const payloads = config.payloadStoreDbPath;
  if (payloads === undefined) return pins;
  if (!existsSync(payloads)) {
    pass("payload store", `${payloads} does not exist yet; providerd creates it at start`);
    return pins;
  }
  try {
    using _store = PayloadStore.open(payloads, { readonly: true });
    pass("payload store", `${payloads} opens`);
  } catch (err) {
    fail("payload store", `${payloads} does not open: ${message(err)}`);
  }
  return pins;
}

/**
 * database_url: PostgreSQL answers with the password given, and holds this provider's
 * placement store (read only: nothing is migrated or written). Returns the pinned storage
 * IDs, undefined when they could not be read.
 */
export async function checkDatabase(
  config: ProviderConfig,
  env: Record<string, string | undefined>,
  timeoutMs: number,
  pass: Note,
  fail: Note,
): Promise<ReadonlyMap<string, string> | undefined> {
  let client: pg.Client | undefined;
  try {
    const password = readDatabasePassword(config.databasePasswordFile, env);
    client = new pg.Client({
      connectionString: config.databaseUrl,
      ...(password === undefined ? {} : { password }),
      connectionTimeoutMillis: timeoutMs,
      statement_timeout: timeoutMs,
    });
    client.on("error", () => {});
    await client.connect();
    const bound = await client.query<{ value: string }>(
      "SELECT value FROM placement_meta WHERE key = 'provider_uuid'",
    );
    const provider = bound.rows[0]?.value;
    if (provider !== config.providerUuid) {
      fail(
        "database",
        provider === undefined
          ? "holds no placement store: move one in with fred placement migrate --to <database_url>"
          : `holds provider ${provider}'s stores, not ${config.providerUuid}`,
      );
      return undefined;
    }
    const backends = await client.query<{ name: string; storage_id: string }>(
      "SELECT name, storage_id FROM placement_backends",
    );
    pass("database", `answers and holds this provider's stores (${backends.rowCount} pinned backend(s))`);
    return new Map(backends.rows.map((r) => [r.name, r.storage_id]));
  } catch (err) {
    const missing = (err as { code?: string }).code === "42P01"; // undefined_table: no schema yet
    fail(
      "database",
      missing
        ? "holds no providerd schema yet: move the stores in with fred placement migrate --to <database_url>"
        : `does not answer: ${isFredError(err) ? err.message : describePgError(err)}`,
    );
    return undefined;
  } finally {
    await client?.end().catch(() => {});
  }
}

/** The backend answers its signed GET /stats as the storage the placement store pinned. */
async function checkBackend(
  config: ProviderConfig,
  backend: BackendConfig,
  pins: ReadonlyMap<string, string> | undefined,
  clock: Clock,
  deadline: Deadline,
): Promise<PreflightCheck> {
  const check = `backend ${backend.name}`;
  if (backend.fenced)
    return { check, ok: true, detail: "fenced: not contacted (providerd sends it nothing)" };
  const pin = pins?.get(backend.name);
  if (pins !== undefined && pin === undefined) {
    return {
      check,
      ok: false,
      detail: `${backend.name} has no pinned storage ID in the placement store: a backend added after fred placement init is pinned with fred placement add-backend --config <file> --name ${backend.name}, or remove it from backends`,
    };
  }
  let client: BackendClient | undefined;
  try {
    client = await BackendClient.create({
      backend,
      secret: backend.hmacSecret || config.callbackSecret,
      storageId: pin,
      clock,
    });
    const answering = client;
    await deadline(`backend ${backend.name} at ${backend.url}`, "ERR_BACKEND_TIMEOUT", (signal) =>
      answering.stats(signal),
    );
    const detail =
      pin === undefined
        ? `${backend.url} answers (no placement store yet to pin its storage)`
        : `${backend.url} answers as storage ${pin}`;
    return { check, ok: true, detail };
  } catch (err) {
    return {
      check,
      ok: false,
      detail: `${backend.url} does not answer as expected (${message(err)}): start it, or fix backends "${backend.name}" url / hmac_secret / TLS files`,
    };
  } finally {
    await client?.close();
  }
}

/** One line per check, for the operator's terminal. */
export function preflightLines(report: PreflightReport): string[] {
  return report.checks.map((c) => `${c.ok ? "ok  " : "FAIL"} ${c.check}: ${c.detail}`);
}
