// Over 500 lines: the Docker backend's whole configuration schema (zod), its defaults and the refusals of unsupported keys, kept together so one file says what a key does.
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { isStrongSecret } from "../../auth/hmac.ts";
import { parseConfigDuration } from "../../core/duration.ts";
import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import {
  checkClientCaBundle,
  DEFAULT_DIAGNOSTICS_MAX_AGE_MS,
  DEFAULT_ORPHAN_CONFIRMATIONS,
  DEFAULT_RELEASES_MAX_AGE_MS,
  DEFAULT_RETENTION_MAX_AGE_MS,
  DEFAULT_RETENTION_REAP_INTERVAL_MS,
  type ListenAddress,
  type PartitionSource,
  parseBackendListen,
  parsePartitionSource,
  type RetentionPolicy,
  tlsOnSocketProblem,
} from "../kit/index.ts";
import { type EgressConfig, egressConfig, egressSchema } from "./egress-config.ts";
import { type IngressConfig, ingressConfig, ingressSchema, REFUSED_INGRESS_KEYS } from "./ingress/index.ts";

/**
 * `fred backend docker -c docker-backend.yaml`: the operator's file, validated once into a
 * frozen object. Keys follow the reference docker-backend (snake_case, Go durations);
 * durations become `…Ms`. Unknown keys are refused, and keys the reference has but this
 * backend does not (separate *_db_path files, retention, v0.13 migration) get a
 * refusal that says why, so an operator porting a reference file learns what to change.
 * The retention keys are the reference's, top-level, with its defaults.
 */

/** `image_pull_policy` values; `always` is the reference's behaviour and the default. */
export const IMAGE_PULL_POLICIES = ["always", "if-not-present"] as const;
export type ImagePullPolicy = (typeof IMAGE_PULL_POLICIES)[number];

export const REFUSED_KEYS: Record<string, string> = {
  callback_db_path: "this backend keeps one SQLite journal: set db_path instead",
  diagnostics_db_path: "this backend keeps one SQLite journal: set db_path instead",
  releases_db_path: "this backend keeps one SQLite journal: set db_path instead",
  retention_db_path: "this backend keeps one SQLite journal: set db_path instead",
  migration_ready_timeout: "v0.13 migration is not supported by this backend",
  migration_grace_period: "v0.13 migration is not supported by this backend",
  network_isolation: "tenant network isolation is always on in this backend",
  min_avg_file_bytes: "XFS project quotas are not supported; disk limits use btrfs qgroups",
};

const duration = (name: string) =>
  z.string().transform((text, ctx) => {
    const d = parseConfigDuration(text);
    if (d.ok) return d.ms;
    ctx.addIssue({ code: "custom", message: `${name}: ${JSON.stringify(text)} is not a Go duration ≥ 0` });
    return z.NEVER;
  });

const positiveDuration = (name: string) =>
  duration(name).refine((ms) => ms > 0, { message: `${name} must be greater than zero` });

const percent = (name: string) =>
  z
    .number(`${name} must be a number from 0 to 100`)
    .min(0, `${name} must be a number from 0 to 100`)
    .max(100, `${name} must be a number from 0 to 100`);

const profileSchema = z.strictObject({
  cpu_cores: z.number().positive().max(1024),
  memory_mb: z
    .number()
    .int()
    .min(6)
    .max(16 * 1024 * 1024),
  disk_mb: z.number().int().min(0).default(0),
});

const quotaSchema = z.strictObject({
  max_cpu_cores: z.number().positive(),
  max_memory_mb: z.number().int().positive(),
  max_disk_mb: z.number().int().positive(),
});

const cap = (name: string) => z.number().int(`${name} must be an integer ≥ 0 (0 = unlimited)`).min(0);

const tenantBudgetSchema = z.strictObject({
  max_retained_leases: cap("max_retained_leases").default(0),
  max_retained_disk_mb: cap("max_retained_disk_mb").default(0),
  max_partitions: cap("max_partitions").default(0),
  per_partition_max_leases: cap("per_partition_max_leases").default(0),
  per_partition_max_disk_mb: cap("per_partition_max_disk_mb").default(0),
});

const partitionSourceSchema = z.string().transform((text, ctx): PartitionSource => {
  const parsed = parsePartitionSource(text);
  if (!("problem" in parsed)) return parsed;
  ctx.addIssue({ code: "custom", message: `retention_partition_source ${parsed.problem}` });
  return z.NEVER;
});

export const DEFAULT_IMAGE_GC_AFTER_MS = 24 * 3_600_000;
export const DEFAULT_IMAGE_GC_INTERVAL_MS = 10 * 60_000;

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;

export const fileSchema = z.strictObject({
  log_level: z.enum(LOG_LEVELS).default("info"),
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, "name: lowercase letters, digits, '.', '_' or '-', ≤ 63 chars")
    .default("docker"),
  listen_addr: z.string().min(1).default(":9001"),
  max_request_body_size: z
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(2 * 1024 * 1024),
  tls_cert_file: z.string().min(1).optional(),
  tls_key_file: z.string().min(1).optional(),
  tls_client_ca_file: z.string().min(1).optional(),
  tls_client_allowed_names: z
    .array(
      z
        .string()
        .regex(/^\S(?:.*\S)?$/, "tls_client_allowed_names: each name is non-empty, without outer spaces"),
    )
    .min(1, "tls_client_allowed_names: list at least one name, or omit the key to accept any name")
    .optional(),
  docker_host: z.string().min(1).default("unix:///var/run/docker.sock"),
  host_address: z.string().min(1, "host_address is required (what tenants connect to)"),
  host_bind_ip: z.union([z.ipv4(), z.ipv6()]).default("0.0.0.0"),
  total_cpu_cores: z.number().positive().default(8),
  total_memory_mb: z.number().int().positive().default(16384),
  total_disk_mb: z.number().int().min(0).default(102400),
  sku_mapping: z.record(z.string(), z.string().min(1)),
  sku_profiles: z.record(z.string().min(1), profileSchema),
  tenant_quota: quotaSchema.optional(),
  allowed_registries: z.array(z.string().min(1)).min(1).default(["docker.io", "ghcr.io"]),
  callback_secret: z.string().refine(isStrongSecret, {
    message: "callback_secret must be at least 32 bytes",
  }),
  previous_callback_secret: z
    .string()
    .refine(isStrongSecret, {
      message: "previous_callback_secret must be at least 32 bytes",
    })
    .optional(),
  production_mode: z.boolean().default(false),
  db_path: z.string().min(1).default("docker-backend.db"),
  volume_data_path: z.string().min(1).default("/var/lib/fred/volumes"),
  volume_filesystem: z.enum(["btrfs", "none"]).default("btrfs"),
  container_pids_limit: z.number().int().min(16).max(1_000_000).default(256),
  container_tmpfs_size_mb: z.number().int().min(1).max(65536).default(64),
  container_readonly_rootfs: z.boolean().default(true),
  provision_timeout: positiveDuration("provision_timeout").default(600_000),
  image_pull_timeout: positiveDuration("image_pull_timeout").default(300_000),
  image_pull_policy: z.enum(IMAGE_PULL_POLICIES).default("always"),
  container_create_timeout: positiveDuration("container_create_timeout").default(30_000),
  container_start_timeout: positiveDuration("container_start_timeout").default(30_000),
  container_stop_timeout: positiveDuration("container_stop_timeout").default(30_000),
  startup_verify_duration: duration("startup_verify_duration").default(5_000),
  reconcile_interval: positiveDuration("reconcile_interval").default(300_000),
  reservation_ttl: positiveDuration("reservation_ttl").default(600_000),
  // 0 = never expire, as in the reference.
  diagnostics_max_age: duration("diagnostics_max_age").default(DEFAULT_DIAGNOSTICS_MAX_AGE_MS),
  releases_max_age: duration("releases_max_age").default(DEFAULT_RELEASES_MAX_AGE_MS),
  // The usage sampler's pass (docs/docker-backend.md, "Usage sampling"): at least 5 s, so an
  // hour of history stays within the contract's 720 samples.
  usage_sample_interval: duration("usage_sample_interval")
    .refine((ms) => ms >= 5_000, { message: "usage_sample_interval must be at least 5s" })
    .default(10_000),
  // Images the backend pulled and no lease uses any more (docs/docker-backend.md, "Images on
  // the host"); 0 = never collected.
  image_gc_after: duration("image_gc_after").default(DEFAULT_IMAGE_GC_AFTER_MS),
  image_gc_interval: positiveDuration("image_gc_interval").default(DEFAULT_IMAGE_GC_INTERVAL_MS),
  image_gc_high_water_percent: percent("image_gc_high_water_percent").default(85),
  image_gc_low_water_percent: percent("image_gc_low_water_percent").default(80),
  retain_on_close: z.boolean().default(false),
  // 0 = retained data never expires, as in the reference.
  retention_max_age: duration("retention_max_age").default(DEFAULT_RETENTION_MAX_AGE_MS),
  retention_reap_interval: positiveDuration("retention_reap_interval").default(
    DEFAULT_RETENTION_REAP_INTERVAL_MS,
  ),
  retention_orphan_confirmations: z
    .number()
    .int("retention_orphan_confirmations must be an integer ≥ 1")
    .min(1, "retention_orphan_confirmations must be an integer ≥ 1")
    .default(DEFAULT_ORPHAN_CONFIRMATIONS),
  max_retained_leases_per_tenant: cap("max_retained_leases_per_tenant").default(0),
  max_retained_disk_mb: cap("max_retained_disk_mb").default(0),
  max_retained_disk_mb_per_tenant: cap("max_retained_disk_mb_per_tenant").default(0),
  retention_partition_source: partitionSourceSchema.default({ kind: "none" }),
  retention_tenant_budgets: z.record(z.string().min(1), tenantBudgetSchema).default({}),
  // HTTPS hostnames through Caddy (src/backend/docker/ingress/config.ts).
  ingress: ingressSchema,
  // What tenant containers may reach (src/backend/docker/egress-config.ts).
  egress: egressSchema,
});

type FileConfig = z.output<typeof fileSchema>;

export interface SkuProfile {
  readonly cpuCores: number;
  readonly memoryMb: number;
  readonly diskMb: number;
}

export interface DockerBackendConfig {
  readonly logLevel: (typeof LOG_LEVELS)[number];
  readonly name: string;
  /** listen_addr: a TCP host and port, or a Unix socket path (`unix:/…`, created 0660). */
  readonly listen: ListenAddress;
  readonly maxRequestBodySize: number;
  readonly tls?: {
    readonly certFile: string;
    readonly keyFile: string;
    /** Mutual TLS: client certificates must chain to this PEM bundle. */
    readonly clientCaFile?: string;
    /** …and carry one of these as subject CN or DNS subjectAltName. */
    readonly clientAllowedNames?: readonly string[];
  };
  readonly dockerHost: string;
  readonly hostAddress: string;
  readonly hostBindIp: string;
  readonly totalCpuCores: number;
  readonly totalMemoryMb: number;
  readonly totalDiskMb: number;
  /** chain SKU UUID → profile name */
  readonly skuMapping: Readonly<Record<string, string>>;
  readonly skuProfiles: Readonly<Record<string, SkuProfile>>;
  readonly tenantQuota?: {
    readonly maxCpuCores: number;
    readonly maxMemoryMb: number;
    readonly maxDiskMb: number;
  };
  readonly allowedRegistries: readonly string[];
  readonly callbackSecret: string;
  /** Verify-only key accepted on requests while providerd rotates to `callbackSecret`. */
  readonly previousCallbackSecret?: string;
  readonly productionMode: boolean;
  readonly dbPath: string;
  readonly volumeDataPath: string;
  readonly volumeFilesystem: "btrfs" | "none";
  readonly containerPidsLimit: number;
  readonly containerTmpfsSizeMb: number;
  readonly containerReadonlyRootfs: boolean;
  readonly provisionTimeoutMs: number;
  readonly imagePullTimeoutMs: number;
  /**
   * `always`: every provision and update pulls the manifest's reference and pins the digest
   * it resolved to; `if-not-present`: an image already on the host is used as is (hosts
   * with no registry, locally built images).
   */
  readonly imagePullPolicy: ImagePullPolicy;
  readonly containerCreateTimeoutMs: number;
  readonly containerStartTimeoutMs: number;
  readonly containerStopTimeoutMs: number;
  readonly startupVerifyDurationMs: number;
  readonly reconcileIntervalMs: number;
  /** usage_sample_interval: how often every lease's usage is sampled (10 s, at least 5 s). */
  readonly usageSampleIntervalMs: number;
  readonly reservationTtlMs: number;
  /** How long a lease's last failure (reason, message, captured logs) stays readable; 0 = always. */
  readonly diagnosticsMaxAgeMs: number;
  /** Superseded and failed releases in `GET /releases/{lease}` are dropped after this long; 0 = never. */
  readonly releasesMaxAgeMs: number;
  /** image_gc_*: collection of unused images; `afterMs` 0 = off. */
  readonly imageGc: Readonly<{
    afterMs: number;
    intervalMs: number;
    highWaterPercent: number;
    lowWaterPercent: number;
  }>;
  /** retain_on_close and the retention_* / max_retained_* keys. */
  readonly retention: Readonly<RetentionPolicy>;
  /** Present when `ingress.enabled`: hostnames and custom domains through Caddy. */
  readonly ingress?: IngressConfig;
  /** The egress policy: what tenant containers may reach besides the public internet. */
  readonly egress: EgressConfig;
}

/** Environment variables that override a file key (the reference's names). */
export const ENV_OVERRIDES: Readonly<Record<string, keyof FileConfig>> = {
  DOCKER_BACKEND_ADDR: "listen_addr",
  DOCKER_BACKEND_CALLBACK_SECRET: "callback_secret",
  DOCKER_BACKEND_PREVIOUS_CALLBACK_SECRET: "previous_callback_secret",
  DOCKER_BACKEND_HOST_ADDRESS: "host_address",
  DOCKER_HOST: "docker_host",
  DOCKER_BACKEND_MAX_REQUEST_BODY_SIZE: "max_request_body_size",
};

function configError(message: string): FredError {
  return new FredError("ERR_CONFIG", `docker backend config: ${message}`);
}

/** "host:port", ":port" (host "" = all interfaces), "[v6]:port" or "unix:/absolute/path". */
export function parseListenAddr(addr: string): ListenAddress {
  const parsed = parseBackendListen(addr);
  if (!parsed.ok) throw configError(`listen_addr ${JSON.stringify(addr)} ${parsed.problem}`);
  return parsed.value;
}

function applyEnv(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  for (const [variable, key] of Object.entries(ENV_OVERRIDES)) {
    const value = env[variable];
    if (value === undefined || value === "") continue;
    raw[key] = key === "max_request_body_size" ? Number(value) : value;
  }
}

function crossCheck(file: FileConfig): void {
  const onSocket = "socketPath" in parseListenAddr(file.listen_addr);
  for (const [sku, profile] of Object.entries(file.sku_mapping)) {
    if (!isCanonicalUuid(sku))
      throw configError(`sku_mapping key ${JSON.stringify(sku)} is not a lowercase UUID`);
    if (!(profile in file.sku_profiles))
      throw configError(`sku_mapping[${sku}] names unknown profile ${JSON.stringify(profile)}`);
  }
  const reachable = new Set(Object.values(file.sku_mapping));
  for (const name of Object.keys(file.sku_profiles)) {
    if (!reachable.has(name))
      throw configError(`sku_profiles.${name} is not referenced by any sku_mapping entry`);
  }
  if ((file.tls_cert_file === undefined) !== (file.tls_key_file === undefined))
    throw configError("tls_cert_file and tls_key_file must be set together");
  if (onSocket && file.tls_cert_file !== undefined)
    throw configError(tlsOnSocketProblem(["tls_cert_file", "tls_key_file"]));
  if (file.tls_client_allowed_names !== undefined && file.tls_client_ca_file === undefined)
    throw configError(
      "tls_client_allowed_names needs tls_client_ca_file (the CA that vouches for the names)",
    );
  if (file.tls_client_ca_file !== undefined && file.tls_cert_file === undefined)
    throw configError(
      "tls_client_ca_file needs tls_cert_file and tls_key_file (mutual TLS is part of HTTPS)",
    );
  if (file.production_mode) {
    // A socket is not a network address: its file mode, not TLS, decides who connects.
    if (file.tls_cert_file === undefined && !onSocket)
      throw configError(
        "production_mode requires tls_cert_file and tls_key_file (or a unix: listen_addr for a backend co-located with providerd)",
      );
    if (file.volume_filesystem !== "btrfs")
      throw configError("production_mode requires volume_filesystem: btrfs (enforced disk sizes)");
  }
  if (file.image_gc_low_water_percent > file.image_gc_high_water_percent)
    throw configError(
      `image_gc_low_water_percent (${file.image_gc_low_water_percent}) must not exceed image_gc_high_water_percent (${file.image_gc_high_water_percent}): collection stops at the low mark`,
    );
  if (file.retain_on_close && file.volume_filesystem !== "btrfs")
    throw configError(
      "retain_on_close needs volume_filesystem: btrfs (retained data is kept as btrfs snapshots; without volumes there is nothing to retain)",
    );
}

/** Read once at load, so a typo or a permission problem fails the config, not the first handshake. */
function readableCaBundle(path: string): string {
  let pem: Buffer;
  try {
    pem = readFileSync(path);
  } catch (err) {
    throw configError(
      `tls_client_ca_file ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  try {
    checkClientCaBundle(pem, `tls_client_ca_file ${path}`);
  } catch (err) {
    throw configError((err as Error).message);
  }
  return path;
}

/** Validates a parsed YAML document (plus env overrides) into the frozen config. */
export function parseDockerBackendConfig(
  doc: unknown,
  opts: { env?: NodeJS.ProcessEnv; baseDir?: string } = {},
): DockerBackendConfig {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc))
    throw configError("the file must hold a YAML mapping of keys");
  const raw: Record<string, unknown> = { ...(doc as Record<string, unknown>) };
  for (const key of Object.keys(raw)) {
    const why = REFUSED_KEYS[key];
    if (why !== undefined) throw configError(`key ${key} is not accepted: ${why}`);
  }
  const ingressRaw = raw.ingress;
  if (ingressRaw !== null && typeof ingressRaw === "object" && !Array.isArray(ingressRaw)) {
    for (const key of Object.keys(ingressRaw)) {
      const why = REFUSED_INGRESS_KEYS[key];
      if (why !== undefined) throw configError(`key ingress.${key} is not accepted: ${why}`);
    }
  }
  applyEnv(raw, opts.env ?? {});
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const where = first?.path.length ? `${first.path.join(".")}: ` : "";
    throw configError(`${where}${first?.message ?? "invalid"}`);
  }
  const file = parsed.data;
  crossCheck(file);
  const baseDir = opts.baseDir ?? process.cwd();
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(baseDir, p));
  let ingress: IngressConfig | undefined;
  let egress: EgressConfig;
  try {
    ingress = ingressConfig(file.ingress, { abs, productionMode: file.production_mode });
    egress = egressConfig(file.egress, file.production_mode);
  } catch (err) {
    throw configError((err as Error).message);
  }
  const config: DockerBackendConfig = {
    logLevel: file.log_level,
    name: file.name,
    listen: parseListenAddr(file.listen_addr),
    maxRequestBodySize: file.max_request_body_size,
    ...(file.tls_cert_file !== undefined && file.tls_key_file !== undefined
      ? {
          tls: Object.freeze({
            certFile: abs(file.tls_cert_file),
            keyFile: abs(file.tls_key_file),
            ...(file.tls_client_ca_file !== undefined
              ? { clientCaFile: readableCaBundle(abs(file.tls_client_ca_file)) }
              : {}),
            ...(file.tls_client_allowed_names !== undefined
              ? { clientAllowedNames: Object.freeze([...file.tls_client_allowed_names]) }
              : {}),
          }),
        }
      : {}),
    dockerHost: file.docker_host,
    hostAddress: file.host_address,
    hostBindIp: file.host_bind_ip,
    totalCpuCores: file.total_cpu_cores,
    totalMemoryMb: file.total_memory_mb,
    totalDiskMb: file.total_disk_mb,
    skuMapping: Object.freeze({ ...file.sku_mapping }),
    skuProfiles: Object.freeze(
      Object.fromEntries(
        Object.entries(file.sku_profiles).map(([name, p]) => [
          name,
          Object.freeze({ cpuCores: p.cpu_cores, memoryMb: p.memory_mb, diskMb: p.disk_mb }),
        ]),
      ),
    ),
    ...(file.tenant_quota
      ? {
          tenantQuota: Object.freeze({
            maxCpuCores: file.tenant_quota.max_cpu_cores,
            maxMemoryMb: file.tenant_quota.max_memory_mb,
            maxDiskMb: file.tenant_quota.max_disk_mb,
          }),
        }
      : {}),
    allowedRegistries: Object.freeze([...file.allowed_registries]),
    callbackSecret: file.callback_secret,
    ...(file.previous_callback_secret !== undefined
      ? { previousCallbackSecret: file.previous_callback_secret }
      : {}),
    productionMode: file.production_mode,
    dbPath: abs(file.db_path),
    volumeDataPath: abs(file.volume_data_path),
    volumeFilesystem: file.volume_filesystem,
    containerPidsLimit: file.container_pids_limit,
    containerTmpfsSizeMb: file.container_tmpfs_size_mb,
    containerReadonlyRootfs: file.container_readonly_rootfs,
    provisionTimeoutMs: file.provision_timeout,
    imagePullTimeoutMs: file.image_pull_timeout,
    imagePullPolicy: file.image_pull_policy,
    containerCreateTimeoutMs: file.container_create_timeout,
    containerStartTimeoutMs: file.container_start_timeout,
    containerStopTimeoutMs: file.container_stop_timeout,
    startupVerifyDurationMs: file.startup_verify_duration,
    reconcileIntervalMs: file.reconcile_interval,
    usageSampleIntervalMs: file.usage_sample_interval,
    reservationTtlMs: file.reservation_ttl,
    diagnosticsMaxAgeMs: file.diagnostics_max_age,
    releasesMaxAgeMs: file.releases_max_age,
    imageGc: Object.freeze({
      afterMs: file.image_gc_after,
      intervalMs: file.image_gc_interval,
      highWaterPercent: file.image_gc_high_water_percent,
      lowWaterPercent: file.image_gc_low_water_percent,
    }),
    retention: Object.freeze({
      retainOnClose: file.retain_on_close,
      maxAgeMs: file.retention_max_age,
      reapIntervalMs: file.retention_reap_interval,
      orphanConfirmations: file.retention_orphan_confirmations,
      maxRetainedLeasesPerTenant: file.max_retained_leases_per_tenant,
      maxRetainedDiskMb: file.max_retained_disk_mb,
      maxRetainedDiskMbPerTenant: file.max_retained_disk_mb_per_tenant,
      partitionSource: file.retention_partition_source,
      tenantBudgets: Object.freeze(
        Object.fromEntries(
          Object.entries(file.retention_tenant_budgets).map(([tenant, b]) => [
            tenant,
            Object.freeze({
              maxRetainedLeases: b.max_retained_leases,
              maxRetainedDiskMb: b.max_retained_disk_mb,
              maxPartitions: b.max_partitions,
              perPartitionMaxLeases: b.per_partition_max_leases,
              perPartitionMaxDiskMb: b.per_partition_max_disk_mb,
            }),
          ]),
        ),
      ),
    }),
    ...(ingress !== undefined ? { ingress } : {}),
    egress,
  };
  return Object.freeze(config);
}

/** Reads and validates the YAML file; relative paths in it resolve against its directory. */
export function loadDockerBackendConfig(
  path: string,
  env: NodeJS.ProcessEnv = process.env,
): DockerBackendConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw configError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text, { uniqueKeys: true });
  } catch (err) {
    throw configError(`${path} is not valid YAML: ${(err as Error).message.split("\n")[0]}`);
  }
  return parseDockerBackendConfig(doc ?? {}, { env, baseDir: dirname(resolve(path)) });
}

/** The config as it may appear in logs: the callback secret never does. */
export function redactedConfig(config: DockerBackendConfig): Record<string, unknown> {
  return {
    ...config,
    callbackSecret: "[redacted]",
    ...(config.previousCallbackSecret ? { previousCallbackSecret: "[redacted]" } : {}),
  };
}
