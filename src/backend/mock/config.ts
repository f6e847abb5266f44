import { readFileSync } from "node:fs";
import { isStrongSecret, MIN_SECRET_BYTES } from "../../auth/hmac.ts";
import { parseConfigDuration } from "../../core/duration.ts";
import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid, isUuidV4 } from "../../core/uuid.ts";
import type { ListenAddress, PoolTotals, SkuProfile } from "../kit/index.ts";
import {
  checkClientCaBundle,
  DEFAULT_ORPHAN_CONFIRMATIONS,
  DEFAULT_RETENTION_MAX_AGE_MS,
  DEFAULT_RETENTION_REAP_INTERVAL_MS,
  parseBackendListen,
  RECEIPT_WINDOW,
  type RetentionPolicy,
  tlsOnSocketProblem,
} from "../kit/index.ts";

/**
 * `fred backend mock` configuration, from MOCK_BACKEND_* environment variables only
 * (the reference mock's names, plus ours for the journal, SKUs, capacity and failure
 * injection). Validated once into a frozen object; secrets never appear in errors.
 */
export interface MockBackendConfig {
  /** MOCK_BACKEND_ADDR: host:port, or unix:/absolute/path (a socket created 0660). */
  readonly listen: ListenAddress;
  readonly name: string;
  readonly storageId: string;
  readonly delayMs: number;
  readonly secret: string;
  readonly previousSecret: string | undefined;
  readonly tlsSkipVerify: boolean;
  /** HTTPS listener; `clientCa` (+ `clientAllowedNames`) demands client certificates. */
  readonly tls:
    | {
        readonly cert: Buffer;
        readonly key: Buffer;
        readonly clientCa?: Buffer;
        readonly clientAllowedNames?: readonly string[];
      }
    | undefined;
  readonly clientTimeoutMs: number;
  readonly readTimeoutMs: number;
  readonly writeTimeoutMs: number;
  readonly idleTimeoutMs: number;
  /** Journal file; undefined = in-memory journal bound to storageId at start. */
  readonly dbPath: string | undefined;
  /** SKU UUID → profile; undefined = every SKU gets DEFAULT_MOCK_PROFILE. */
  readonly skus: Readonly<Record<string, SkuProfile>> | undefined;
  readonly capacity: PoolTotals;
  readonly allowedRegistries: readonly string[];
  readonly reservationTtlMs: number;
  readonly reconcileIntervalMs: number;
  /** MOCK_BACKEND_DIAGNOSTICS_MAX_AGE: how long a lease's last failure stays readable; 0 = always. */
  readonly diagnosticsMaxAgeMs: number;
  /** MOCK_BACKEND_RELEASES_MAX_AGE: superseded and failed releases are dropped this long after creation; 0 = never. */
  readonly releasesMaxAgeMs: number;
  /**
   * MOCK_BACKEND_MAINTENANCE_RECEIPTS: settled restart/update receipts kept per lease
   * (1,024, the kit's window); a smaller window lets tests push a command out of it.
   */
  readonly maintenanceReceipts: number;
  /** MOCK_BACKEND_FAIL_*: provisions, restarts and updates alike (an update to an image tagged `fail` fails too). */
  readonly failRate: number;
  readonly failLeases: ReadonlySet<string>;
  readonly hangLeases: ReadonlySet<string>;
  /** MOCK_BACKEND_REQUIRE_PAYLOAD=1: a provision without a manifest is refused 400, as the Docker backend does. */
  readonly requirePayload: boolean;
  /**
   * MOCK_BACKEND_RETAIN_ON_CLOSE=1: closes keep the lease's data (rows in the journal, no
   * volumes), with MOCK_BACKEND_RETENTION_MAX_AGE (2160h), _RETENTION_REAP_INTERVAL (1h),
   * _MAX_RETAINED_LEASES_PER_TENANT, _MAX_RETAINED_DISK_MB, _MAX_RETAINED_DISK_MB_PER_TENANT
   * (0 = unlimited). Undefined when off (restore answers a bare 422).
   */
  readonly retention: RetentionPolicy | undefined;
  /** MOCK_BACKEND_RETAINED_DISK_MB: what each retained disk-bearing instance measures (0). */
  readonly retainedDiskMb: number;
  /** MOCK_BACKEND_HANG_RETENTION: leases whose retain/destroy (or adopt, as destination) hangs. */
  readonly hangRetention: ReadonlySet<string>;
  /** MOCK_BACKEND_USAGE_SAMPLE_INTERVAL: how often the usage sampler passes (10s). */
  readonly usageSampleIntervalMs: number;
  /** MOCK_BACKEND_USAGE=0: the substrate cannot sample usage (GET /usage answers 501), like a backend without it. */
  readonly usage: boolean;
  /** MOCK_BACKEND_HANG_USAGE=1: signed GET /usage/{uuid} never answers. */
  readonly hangUsage: boolean;
  /** MOCK_BACKEND_HANG_INVENTORY=1: signed GET /provisions and GET /retentions never answer. */
  readonly hangInventory: boolean;
  /** MOCK_BACKEND_LOG_INTERVAL: while a lease's logs are followed, each instance writes a line this often (1s; 0s: never). */
  readonly logIntervalMs: number;
  /** MOCK_BACKEND_HANG_LOG_FOLLOW=1: signed streaming log reads (`GET /logs/{uuid}?follow=true`) never answer. */
  readonly hangLogFollow: boolean;
  /** MOCK_BACKEND_HANG_EXEC=1: signed GET /shell/{uuid} is accepted and never answered (no upgrade). */
  readonly hangExec: boolean;
}

export const DEFAULT_MOCK_PROFILE: SkuProfile = Object.freeze({
  cpu_cores: 0.5,
  memory_mb: 512,
  disk_mb: 1024,
});
export const DEFAULT_MOCK_CAPACITY: PoolTotals = Object.freeze({
  cpuCores: 256,
  memoryMb: 512 * 1024,
  diskMb: 4 * 1024 * 1024,
});

const fail = (message: string) => new FredError("ERR_CONFIG", message);

function duration(env: NodeJS.ProcessEnv, key: string, fallback: string): number {
  const raw = env[key] ?? fallback;
  const d = parseConfigDuration(raw);
  if (!d.ok) throw fail(`${key} must be a Go duration such as 500ms, 10s or 5m (got ${JSON.stringify(raw)})`);
  return d.ms;
}

function bool(env: NodeJS.ProcessEnv, key: string): boolean {
  const raw = (env[key] ?? "").toLowerCase();
  if (raw === "" || raw === "false" || raw === "0") return false;
  if (raw === "true" || raw === "1") return true;
  throw fail(`${key} must be true or false`);
}

function leaseList(env: NodeJS.ProcessEnv, key: string): ReadonlySet<string> {
  const raw = env[key] ?? "";
  const ids = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const id of ids)
    if (!isCanonicalUuid(id)) throw fail(`${key}: ${JSON.stringify(id)} is not a lease UUID`);
  return new Set(ids);
}

function profile(value: unknown, where: string): SkuProfile {
  const p = value as Record<string, unknown>;
  const ok =
    typeof p === "object" &&
    p !== null &&
    typeof p.cpu_cores === "number" &&
    p.cpu_cores > 0 &&
    Number.isInteger(p.memory_mb) &&
    (p.memory_mb as number) > 0 &&
    (p.disk_mb === undefined || (Number.isInteger(p.disk_mb) && (p.disk_mb as number) >= 0)) &&
    Object.keys(p).every((k) => k === "cpu_cores" || k === "memory_mb" || k === "disk_mb");
  if (!ok) throw fail(`${where} must be {"cpu_cores":>0,"memory_mb":>0,"disk_mb"?:>=0}`);
  return Object.freeze({
    cpu_cores: p.cpu_cores as number,
    memory_mb: p.memory_mb as number,
    disk_mb: (p.disk_mb as number) ?? 0,
  });
}

function jsonEnv(env: NodeJS.ProcessEnv, key: string): unknown {
  try {
    return JSON.parse(env[key] as string);
  } catch {
    throw fail(`${key} must be JSON`);
  }
}

function listenAddress(raw: string): ListenAddress {
  const parsed = parseBackendListen(raw);
  if (!parsed.ok) throw fail(`MOCK_BACKEND_ADDR ${JSON.stringify(raw)} ${parsed.problem}`);
  const at = parsed.value;
  return "host" in at && at.host === "" ? { host: "0.0.0.0", port: at.port } : at;
}

/** MOCK_BACKEND_TLS_CLIENT_CA_FILE / _ALLOWED_NAMES: mutual TLS on the HTTPS listener. */
function clientCertificates(
  env: NodeJS.ProcessEnv,
  https: boolean,
): { clientCa?: Buffer; clientAllowedNames?: readonly string[] } {
  const caFile = env.MOCK_BACKEND_TLS_CLIENT_CA_FILE || undefined;
  const rawNames = env.MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES || undefined;
  if (rawNames !== undefined && caFile === undefined)
    throw fail("MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES needs MOCK_BACKEND_TLS_CLIENT_CA_FILE");
  if (caFile === undefined) return {};
  if (!https) {
    throw fail(
      "MOCK_BACKEND_TLS_CLIENT_CA_FILE needs MOCK_BACKEND_TLS_CERT_FILE and MOCK_BACKEND_TLS_KEY_FILE " +
        "(mutual TLS is part of HTTPS)",
    );
  }
  let clientCa: Buffer;
  try {
    clientCa = readFileSync(caFile);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw fail(`MOCK_BACKEND_TLS_CLIENT_CA_FILE ${caFile} cannot be read: ${code}`);
  }
  try {
    checkClientCaBundle(clientCa, `MOCK_BACKEND_TLS_CLIENT_CA_FILE ${caFile}`);
  } catch (err) {
    throw fail((err as Error).message);
  }
  if (rawNames === undefined) return { clientCa };
  const names = rawNames
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.length === 0) throw fail("MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES lists no name");
  return { clientCa, clientAllowedNames: Object.freeze(names) };
}

function count(env: NodeJS.ProcessEnv, key: string): number {
  const raw = env[key] ?? "0";
  if (!/^\d{1,9}$/.test(raw)) throw fail(`${key} must be an integer ≥ 0`);
  return Number(raw);
}

function receiptWindow(env: NodeJS.ProcessEnv): number {
  const key = "MOCK_BACKEND_MAINTENANCE_RECEIPTS";
  if (env[key] === undefined || env[key] === "") return RECEIPT_WINDOW;
  const n = count(env, key);
  if (n < 1) throw fail(`${key} must be at least 1 (the command being admitted is always kept)`);
  return n;
}

function retentionPolicy(env: NodeJS.ProcessEnv): RetentionPolicy | undefined {
  if (!bool(env, "MOCK_BACKEND_RETAIN_ON_CLOSE")) return undefined;
  const reapIntervalMs = duration(
    env,
    "MOCK_BACKEND_RETENTION_REAP_INTERVAL",
    `${DEFAULT_RETENTION_REAP_INTERVAL_MS / 1000}s`,
  );
  if (reapIntervalMs <= 0) throw fail("MOCK_BACKEND_RETENTION_REAP_INTERVAL must be greater than zero");
  return Object.freeze({
    retainOnClose: true,
    maxAgeMs: duration(env, "MOCK_BACKEND_RETENTION_MAX_AGE", `${DEFAULT_RETENTION_MAX_AGE_MS / 1000}s`),
    reapIntervalMs,
    orphanConfirmations: DEFAULT_ORPHAN_CONFIRMATIONS,
    maxRetainedLeasesPerTenant: count(env, "MOCK_BACKEND_MAX_RETAINED_LEASES_PER_TENANT"),
    maxRetainedDiskMb: count(env, "MOCK_BACKEND_MAX_RETAINED_DISK_MB"),
    maxRetainedDiskMbPerTenant: count(env, "MOCK_BACKEND_MAX_RETAINED_DISK_MB_PER_TENANT"),
    partitionSource: { kind: "none" as const },
    tenantBudgets: Object.freeze({}),
  });
}

function usageInterval(env: NodeJS.ProcessEnv): number {
  const ms = duration(env, "MOCK_BACKEND_USAGE_SAMPLE_INTERVAL", "10s");
  if (ms < 50) throw fail("MOCK_BACKEND_USAGE_SAMPLE_INTERVAL must be at least 50ms");
  return ms;
}

export function loadMockBackendConfig(env: NodeJS.ProcessEnv): MockBackendConfig {
  const storageId = env.MOCK_BACKEND_STORAGE_ID ?? "";
  if (!isUuidV4(storageId)) throw fail("MOCK_BACKEND_STORAGE_ID is required: a canonical lowercase UUIDv4");
  const secret = env.MOCK_BACKEND_CALLBACK_SECRET ?? "";
  if (!isStrongSecret(secret)) {
    throw fail(`MOCK_BACKEND_CALLBACK_SECRET is required and must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  const previous = env.MOCK_BACKEND_PREVIOUS_CALLBACK_SECRET || undefined;
  if (previous !== undefined && !isStrongSecret(previous)) {
    throw fail(`MOCK_BACKEND_PREVIOUS_CALLBACK_SECRET must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  const certFile = env.MOCK_BACKEND_TLS_CERT_FILE || undefined;
  const keyFile = env.MOCK_BACKEND_TLS_KEY_FILE || undefined;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw fail("MOCK_BACKEND_TLS_CERT_FILE and MOCK_BACKEND_TLS_KEY_FILE must be set together");
  }
  const listen = listenAddress(env.MOCK_BACKEND_ADDR ?? "127.0.0.1:9000");
  if (certFile !== undefined && "socketPath" in listen)
    throw fail(tlsOnSocketProblem(["MOCK_BACKEND_TLS_CERT_FILE", "MOCK_BACKEND_TLS_KEY_FILE"]));
  let tls: MockBackendConfig["tls"];
  if (certFile && keyFile) {
    try {
      tls = { cert: readFileSync(certFile), key: readFileSync(keyFile) };
    } catch (err) {
      throw fail(`cannot read the TLS certificate or key: ${(err as Error).message}`);
    }
  }
  const client = clientCertificates(env, tls !== undefined);
  if (tls !== undefined) tls = Object.freeze({ ...tls, ...client });
  let skus: Record<string, SkuProfile> | undefined;
  if (env.MOCK_BACKEND_SKUS) {
    const map = jsonEnv(env, "MOCK_BACKEND_SKUS");
    if (typeof map !== "object" || map === null || Array.isArray(map))
      throw fail("MOCK_BACKEND_SKUS must be a JSON object");
    skus = {};
    for (const [sku, p] of Object.entries(map)) {
      if (!isCanonicalUuid(sku)) throw fail(`MOCK_BACKEND_SKUS key ${JSON.stringify(sku)} is not a SKU UUID`);
      skus[sku] = profile(p, `MOCK_BACKEND_SKUS[${sku}]`);
    }
    Object.freeze(skus);
  }
  let capacity = DEFAULT_MOCK_CAPACITY;
  if (env.MOCK_BACKEND_CAPACITY) {
    const c = profile(jsonEnv(env, "MOCK_BACKEND_CAPACITY"), "MOCK_BACKEND_CAPACITY");
    capacity = Object.freeze({ cpuCores: c.cpu_cores, memoryMb: c.memory_mb, diskMb: c.disk_mb });
  }
  const failRate = Number(env.MOCK_BACKEND_FAIL_RATE ?? "0");
  if (!(failRate >= 0 && failRate <= 1)) throw fail("MOCK_BACKEND_FAIL_RATE must be a number from 0 to 1");
  const registries = (env.MOCK_BACKEND_ALLOWED_REGISTRIES ?? "docker.io,ghcr.io")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  return Object.freeze({
    listen,
    name: env.MOCK_BACKEND_NAME || "mock-backend",
    storageId,
    delayMs: duration(env, "MOCK_BACKEND_DELAY", "0s"),
    secret,
    previousSecret: previous,
    tlsSkipVerify: bool(env, "MOCK_BACKEND_TLS_SKIP_VERIFY"),
    tls,
    clientTimeoutMs: duration(env, "MOCK_BACKEND_CLIENT_TIMEOUT", "10s"),
    readTimeoutMs: duration(env, "MOCK_BACKEND_READ_TIMEOUT", "15s"),
    writeTimeoutMs: duration(env, "MOCK_BACKEND_WRITE_TIMEOUT", "15s"),
    idleTimeoutMs: duration(env, "MOCK_BACKEND_IDLE_TIMEOUT", "60s"),
    dbPath: env.MOCK_BACKEND_DB_PATH || undefined,
    skus,
    capacity,
    allowedRegistries: Object.freeze(registries),
    reservationTtlMs: duration(env, "MOCK_BACKEND_RESERVATION_TTL", "10m"),
    reconcileIntervalMs: duration(env, "MOCK_BACKEND_RECONCILE_INTERVAL", "5m"),
    diagnosticsMaxAgeMs: duration(env, "MOCK_BACKEND_DIAGNOSTICS_MAX_AGE", "168h"),
    releasesMaxAgeMs: duration(env, "MOCK_BACKEND_RELEASES_MAX_AGE", "2160h"),
    maintenanceReceipts: receiptWindow(env),
    failRate,
    failLeases: leaseList(env, "MOCK_BACKEND_FAIL_LEASES"),
    hangLeases: leaseList(env, "MOCK_BACKEND_HANG_LEASES"),
    requirePayload: bool(env, "MOCK_BACKEND_REQUIRE_PAYLOAD"),
    retention: retentionPolicy(env),
    retainedDiskMb: count(env, "MOCK_BACKEND_RETAINED_DISK_MB"),
    hangRetention: leaseList(env, "MOCK_BACKEND_HANG_RETENTION"),
    hangInventory: bool(env, "MOCK_BACKEND_HANG_INVENTORY"),
    usageSampleIntervalMs: usageInterval(env),
    usage:
      env.MOCK_BACKEND_USAGE === undefined ||
      env.MOCK_BACKEND_USAGE === "" ||
      bool(env, "MOCK_BACKEND_USAGE"),
    hangUsage: bool(env, "MOCK_BACKEND_HANG_USAGE"),
    logIntervalMs: duration(env, "MOCK_BACKEND_LOG_INTERVAL", "1s"),
    hangLogFollow: bool(env, "MOCK_BACKEND_HANG_LOG_FOLLOW"),
    hangExec: bool(env, "MOCK_BACKEND_HANG_EXEC"),
  });
}
