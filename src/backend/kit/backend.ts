import { dirname } from "node:path";
import { rootCertificates } from "node:tls";
import type { FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import { Agent } from "undici";
import { hmacSecret } from "../../auth/hmac.ts";
import { ReleaseStack } from "../../core/async/index.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { unixAddress } from "../../core/unix-address.ts";
import type { Logger } from "../../log.ts";
import { listenUnixSocket } from "../../unix-socket.ts";
import type { AdmissionConfig } from "./admission.ts";
import { type ContractHttpsOptions, checkHttpsOptions } from "./client-tls.ts";
import { DEFAULT_DIAGNOSTICS_MAX_AGE_MS } from "./diagnostics.ts";
import { BackendEngine } from "./engine.ts";
import { openJournalDatabase } from "./journal/identity.ts";
import { Journal } from "./journal/journal.ts";
import { createKitMetrics } from "./metrics.ts";
import { destroysRefused, registerDiskGauges, retentionMetrics } from "./ops-metrics.ts";
import { OutboxSender } from "./outbox-sender.ts";
import { type PoolOptions, ResourcePool } from "./resources.ts";
import { Retention, type RetentionPolicy } from "./retention/index.ts";
import { buildContractServer, type ContractServerOptions } from "./server.ts";
import type { Substrate } from "./substrate.ts";
import { DEFAULT_USAGE_SAMPLE_INTERVAL_MS, UsageSampler } from "./usage/sampler.ts";

/**
 * `startBackend` is the kit's composition root: it opens and verifies the journal, rebuilds
 * the books, runs a first recovery pass, starts the single outbox replay loop and only
 * then listens. A backend kind supplies its substrate and config; everything else is here.
 */
export interface BackendKitOptions {
  /** Backend name (callback `backend` field; must match providerd's backends[].name). */
  name: string;
  /** Lent: the caller that made it closes it (pushed on `releases` before this start, it closes last). */
  substrate: Substrate;
  /**
   * The stack that releases what the backend acquires (server, workers, connections,
   * journal); `RunningBackend.close()` closes it. A root that acquired things of its own
   * first (a substrate, an ingress) passes its stack, so one close releases them all in
   * reverse order. Default: a stack of the backend's own.
   */
  releases?: ReleaseStack;
  /** Journal file path or ":memory:"; mode "verify" for a normal start. */
  journal: {
    path: string;
    mode: "verify" | "bind-or-verify";
    storageId?: string;
    maxLeases?: number;
    /** Settled restart/update receipts kept per lease (RECEIPT_WINDOW, 1,024). */
    maintenanceReceipts?: number;
  };
  logger: Logger;
  clock?: Clock;
  /** HMAC key (≥ 32 bytes) for requests in and callbacks out. */
  secret: string;
  /** Verify-only previous key during rotation. */
  previousSecret?: string;
  listen: ListenAddress;
  /** Serve HTTPS; `clientCa` (+ `clientAllowedNames`) turns on mutual TLS. */
  https?: ContractHttpsOptions;
  /** The file system fred_backend_disk_*_bytes report on (default: the journal's directory). */
  dataPath?: string;
  /** The backend kind's metrics registry; the kit adds its own metrics to it and serves it. */
  metricsRegistry?: Registry;
  /** Extra routes of a backend kind (signed like every contract route), e.g. the mock's failure injection. */
  routes?: ContractServerOptions["routes"];
  resolveSku: AdmissionConfig["resolveSku"];
  pool: PoolOptions;
  allowedRegistries?: readonly string[];
  parseManifest?: AdmissionConfig["parseManifest"];
  requirePayload?: boolean;
  reservationTtlMs?: number;
  reconcileIntervalMs?: number;
  /** Retention of closed leases' data and restore (absent: closes destroy, /restore is a bare 422). */
  retention?: RetentionPolicy;
  /** How long a lease's last failure stays readable (default 168h). */
  diagnosticsMaxAgeMs?: number;
  /** releases_max_age: superseded and failed releases are dropped this long after creation (default 2160h; 0: never). */
  releasesMaxAgeMs?: number;
  /** usage_sample_interval: how often the usage sampler passes over every lease (default 10 s). */
  usageSampleIntervalMs?: number;
  bodyLimitBytes?: number;
  readTimeoutMs?: number;
  idleTimeoutMs?: number;
  callbacks?: {
    attemptTimeoutMs?: number;
    tlsSkipVerify?: boolean;
    /** PEM of one more CA to trust for callbacks, besides Node's (fred up's local CA). */
    extraCaPem?: string;
    backoffMs?: readonly number[];
    chainDeadlineMs?: number;
    replayIntervalMs?: number;
  };
}

/**
 * A TCP host and port, or a Unix socket path for a backend co-located with providerd
 * (created 0660: its owner and group may connect; see src/unix-socket.ts).
 */
export type ListenAddress = { host: string; port: number } | { socketPath: string };

export interface RunningBackend {
  /** What providerd's backends[].url takes: `http(s)://host:port`, or `unix:/path` on a socket. */
  url: string;
  storageId: string;
  engine: BackendEngine;
  journal: Journal;
  retention: Retention | undefined;
  /** The usage sampler, when the substrate can sample. */
  usage: UsageSampler | undefined;
  sender: OutboxSender;
  server: FastifyInstance;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export const DEFAULT_RESERVATION_TTL_MS = 10 * 60_000;
export const DEFAULT_RECONCILE_INTERVAL_MS = 5 * 60_000;
export const DEFAULT_BODY_LIMIT_BYTES = 2 * 1024 * 1024;
export const DEFAULT_RELEASES_MAX_AGE_MS = 2160 * 3_600_000;

/** `--initialize-storage-identity new`: binds a fresh id into a new, empty journal and returns it. */
export function initializeStorageIdentity(path: string, storageId?: string): string {
  const opened = openJournalDatabase({ path, mode: "initialize", storageId });
  opened.database.close();
  return opened.storageId;
}

export async function startBackend(o: BackendKitOptions): Promise<RunningBackend> {
  const clock = o.clock ?? systemClock;
  const logger = o.logger;
  const releases =
    o.releases ??
    new ReleaseStack((err, resource) =>
      logger.warn({ err, resource }, "releasing a backend resource failed"),
    );
  try {
    if (o.https && "socketPath" in o.listen)
      throw new FredError(
        "ERR_CONFIG",
        "TLS on a Unix socket is refused: the socket is local by construction",
      );
    if (o.https) checkHttpsOptions(o.https);
    const secrets = [hmacSecret(o.secret), ...(o.previousSecret ? [hmacSecret(o.previousSecret)] : [])];
    const journal = releases.use("journal", new Journal({ ...o.journal, backendName: o.name }));
    const dispatcher = releases.use(
      "callback connections",
      new Agent({
        connect: {
          rejectUnauthorized: !(o.callbacks?.tlsSkipVerify ?? false),
          ...(o.callbacks?.extraCaPem === undefined
            ? {}
            : { ca: [...rootCertificates, o.callbacks.extraCaPem] }),
        },
        connections: 64,
      }),
    );
    const pool = new ResourcePool(o.pool);
    const metrics = createKitMetrics(journal, pool, o.metricsRegistry);
    registerDiskGauges(metrics.registry, o.dataPath ?? dirname(o.journal.path));
    const sender = new OutboxSender({
      journal,
      secret: secrets[0] as Buffer,
      clock,
      logger: logger.child({ component: "outbox" }),
      dispatcher,
      ...o.callbacks,
      onDelivered: (row) => metrics.callbacksDelivered.inc({ kind: row.kind }),
      onAttemptFailed: (row) => metrics.callbackAttemptsFailed.inc({ kind: row.kind }),
    });
    releases.defer("outbox sender", () => sender.stop());
    const retention =
      o.retention === undefined
        ? undefined
        : new Retention({
            journal,
            pool,
            substrate: o.substrate,
            clock,
            logger,
            policy: o.retention,
            parseManifest: o.parseManifest,
            observe: retentionMetrics(metrics.registry),
          });
    const engine = new BackendEngine({
      journal,
      pool,
      clock,
      backendName: o.name,
      substrate: o.substrate,
      logger,
      resolveSku: o.resolveSku,
      parseManifest: o.parseManifest,
      requirePayload: o.requirePayload ?? false,
      allowedRegistries: o.allowedRegistries,
      reservationTtlMs: o.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS,
      reconcileIntervalMs: o.reconcileIntervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS,
      diagnosticsMaxAgeMs: o.diagnosticsMaxAgeMs ?? DEFAULT_DIAGNOSTICS_MAX_AGE_MS,
      releasesMaxAgeMs: o.releasesMaxAgeMs ?? DEFAULT_RELEASES_MAX_AGE_MS,
      wakeOutbox: sender.wake.bind(sender),
      retention,
      onDestroyRefused: destroysRefused(metrics.registry),
    });
    releases.defer("engine", () => engine.stop());
    if (retention !== undefined) releases.defer("retention", () => retention.stop());
    const sampleUsage = o.substrate.sampleUsage?.bind(o.substrate);
    const usage =
      sampleUsage === undefined
        ? undefined
        : new UsageSampler({
            sample: sampleUsage,
            clock,
            intervalMs: o.usageSampleIntervalMs ?? DEFAULT_USAGE_SAMPLE_INTERVAL_MS,
            logger,
          });
    if (usage !== undefined) releases.defer("usage sampler", () => usage.stop());
    const server = buildContractServer({
      engine,
      substrate: o.substrate,
      metrics,
      logger,
      secrets,
      clock,
      bodyLimitBytes: o.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
      readTimeoutMs: o.readTimeoutMs ?? 15_000,
      idleTimeoutMs: o.idleTimeoutMs ?? 60_000,
      https: o.https,
      allowedRegistries: o.allowedRegistries,
      routes: o.routes,
      retention,
      admission: engine.admission,
      usage,
    });
    await engine.start();
    retention?.start();
    usage?.start();
    sender.start();
    const url = await listen(server, o.listen, o.https !== undefined);
    releases.defer("contract server", () => server.close());
    const running: RunningBackend = {
      url,
      storageId: journal.storageId,
      engine,
      journal,
      retention,
      usage,
      sender,
      server,
      close: () => releases.close(),
      [Symbol.asyncDispose]: () => releases.close(),
    };
    logger.info(
      {
        url: running.url,
        storage_id: journal.storageId,
        backend: o.name,
        client_certificates: o.https?.clientCa === undefined ? "not requested" : "required",
      },
      "backend listening",
    );
    return running;
  } catch (err) {
    await releases.close().catch(() => {});
    throw err;
  }
}

/** Binds the contract server and returns the URL providerd reaches it by. */
async function listen(server: FastifyInstance, at: ListenAddress, https: boolean): Promise<string> {
  if ("socketPath" in at) {
    // Fastify's listen() binds after an await; the socket's mode is set by a bind we make
    // ourselves, once the routes are ready. Fastify's close() still closes this server.
    await server.ready();
    await listenUnixSocket(server.server, at.socketPath, {
      mode: 0o660,
      refuse: (message) =>
        new FredError("ERR_CONFIG", `listen address ${unixAddress(at.socketPath)}: ${message}`),
    });
    return unixAddress(at.socketPath);
  }
  await server.listen({ host: at.host, port: at.port });
  const addr = server.server.address();
  const port = typeof addr === "object" && addr ? addr.port : at.port;
  const host = at.host.includes(":") ? `[${at.host}]` : at.host;
  return `${https ? "https" : "http"}://${host}:${port}`;
}
