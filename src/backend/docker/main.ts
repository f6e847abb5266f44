import { readFileSync } from "node:fs";
import type Docker from "dockerode";
import { Registry } from "prom-client";
import { ReleaseStack } from "../../core/async/index.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { armCrashPoints } from "../../failpoints.ts";
import type { Logger } from "../../log.ts";
import {
  initializeStorageIdentity,
  openJournalDatabase,
  parseTenantManifest,
  RETENTION_CRASH_POINTS,
  type RunningBackend,
  startBackend,
} from "../kit/index.ts";
import { assertBtrfsWithQuotas, BtrfsVolumes } from "./btrfs-volumes.ts";
import type { DockerBackendConfig } from "./config.ts";
import { registerVolumeGauges } from "./docker-metrics.ts";
import { DockerSubstrate } from "./docker-substrate.ts";
import { EgressFirewall } from "./egress-firewall.ts";
import { connectDocker, engineMessage, withPhase } from "./engine.ts";
import { ImageCollector } from "./image-gc/index.ts";
import { Ingress } from "./ingress/index.ts";
import { DOCKER_CRASH_POINTS } from "./maintenance/index.ts";
import { engineIdShift } from "./userns.ts";

/**
 * Composition root of `fred backend docker`: checks the host can keep its promises
 * (btrfs with quotas for enforced disk, a Docker engine that answers and, in production_mode,
 * remaps user namespaces, a journal bound to a storage identity), then runs the kit's contract server on the Docker substrate.
 */

export interface RunningDockerBackend extends RunningBackend {
  substrate: DockerSubstrate;
  ingress: Ingress | undefined;
  /** Absent when `image_gc_after` is 0. */
  imageCollector: ImageCollector | undefined;
  /** Absent when `egress.enforce` is false (development only). */
  egress: EgressFirewall | undefined;
}

const ENGINE_PING_TIMEOUT_MS = 10_000;

/** `--initialize-storage-identity new`: binds a fresh storage id into a new journal. */
export function initializeDockerBackendStorage(config: DockerBackendConfig): string {
  return initializeStorageIdentity(config.dbPath);
}

/** The storage id the journal is bound to; refuses a missing or unbound journal. */
function boundStorageId(dbPath: string): string {
  const opened = openJournalDatabase({ path: dbPath, mode: "verify" });
  opened.database.close();
  return opened.storageId;
}

/** Reads the listener's PEM files; mutual TLS when a client CA bundle is configured. */
function httpsOptions(tls: NonNullable<DockerBackendConfig["tls"]>) {
  return {
    cert: readFileSync(tls.certFile),
    key: readFileSync(tls.keyFile),
    ...(tls.clientCaFile !== undefined ? { clientCa: readFileSync(tls.clientCaFile) } : {}),
    ...(tls.clientAllowedNames !== undefined ? { clientAllowedNames: tls.clientAllowedNames } : {}),
  };
}

export async function startDockerBackend(
  config: DockerBackendConfig,
  deps: {
    logger: Logger;
    clock?: Clock;
    /** `FRED_FAILPOINTS`: crash points for crash-safety tests (maintenance/crash-points.ts, kit/retention/crash-points.ts). */
    failpoints?: string | undefined;
    /** One more CA to trust for HTTPS callbacks (fred up's local CA). */
    callbackCaPem?: string;
  },
): Promise<RunningDockerBackend> {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger;
  // Maintenance steps (maintenance/crash-points.ts) and retention steps (kit and btrfs).
  const crashPoints = armCrashPoints(deps.failpoints, [...DOCKER_CRASH_POINTS, ...RETENTION_CRASH_POINTS]);
  if (crashPoints.length > 0) logger.warn({ failpoints: crashPoints }, "crash points armed (tests only)");
  const storageId = boundStorageId(config.dbPath);
  if (config.volumeFilesystem === "btrfs") {
    await assertBtrfsWithQuotas(config.volumeDataPath);
  } else {
    logger.warn("volume_filesystem is none: disk-bearing SKUs are refused and /stats reports disk_withheld");
  }
  const docker = connectDocker(config.dockerHost);
  const startup = new AbortController();
  try {
    await withPhase(clock, "engine ping", ENGINE_PING_TIMEOUT_MS, startup.signal, () => docker.ping());
  } catch (err) {
    throw new FredError(
      "ERR_DOCKER_UNREACHABLE",
      `docker engine at ${config.dockerHost} does not answer: ${engineMessage(err)}`,
    );
  }
  // Who container root is on the host decides the owner of everything put into volumes.
  const ids = await engineIdShift(
    docker,
    { dockerHost: config.dockerHost, productionMode: config.productionMode, clock, log: logger },
    startup.signal,
  );
  const volumes =
    config.volumeFilesystem === "btrfs" ? new BtrfsVolumes(config.volumeDataPath, storageId, ids) : undefined;
  const registry = new Registry();
  // Ingress first: a proxy that does not answer, or holds another ask gate, refuses the start.
  const ingress = config.ingress
    ? new Ingress({ config: config.ingress, backendName: config.name, clock, log: logger, registry })
    : undefined;
  const releases = new ReleaseStack((err, resource) =>
    logger.warn({ err, resource }, "releasing a backend resource failed"),
  );
  if (ingress !== undefined) releases.use("ingress", ingress);
  try {
    await ingress?.start();
  } catch (err) {
    await releases.close().catch(() => {});
    throw err;
  }
  const egress = config.egress.enforce
    ? new EgressFirewall({
        docker,
        clock,
        log: logger,
        storageId,
        policy: config.egress.policy,
        sweepIntervalMs: config.egress.sweepIntervalMs,
        productionMode: config.productionMode,
        registry,
      })
    : undefined;
  if (egress === undefined)
    logger.warn("egress.enforce is false: tenant containers can reach the host and private networks");
  else releases.use("egress", egress);
  const substrate = new DockerSubstrate({
    config,
    storageId,
    docker,
    clock,
    log: logger,
    volumes,
    ids,
    metricsRegistry: registry,
    ...(ingress ? { ingress } : {}),
    ...(egress ? { egress } : {}),
  });
  releases.use("substrate", substrate);
  try {
    await substrate.pruneNetworks(startup.signal);
    // Before the contract server admits work: every tenant network filtered, or (in
    // production) no start at all.
    await egress?.start(startup.signal);
    // The volume root's identity marker, before any retained row can record it.
    await substrate.retained?.identity(true);
    const running = await startBackend({
      name: config.name,
      substrate,
      releases,
      journal: { path: config.dbPath, mode: "verify", storageId },
      logger,
      clock,
      secret: config.callbackSecret,
      ...(config.previousCallbackSecret ? { previousSecret: config.previousCallbackSecret } : {}),
      listen: config.listen,
      https: config.tls ? httpsOptions(config.tls) : undefined,
      resolveSku: (sku) => {
        const name = config.skuMapping[sku];
        const profile = name === undefined ? undefined : config.skuProfiles[name];
        return (
          profile && { cpu_cores: profile.cpuCores, memory_mb: profile.memoryMb, disk_mb: profile.diskMb }
        );
      },
      pool: {
        totals: {
          cpuCores: config.totalCpuCores,
          memoryMb: config.totalMemoryMb,
          diskMb: config.totalDiskMb,
        },
        ...(config.tenantQuota ? { quota: config.tenantQuota } : {}),
        diskWithheld: volumes === undefined,
      },
      allowedRegistries: config.allowedRegistries,
      parseManifest: parseTenantManifest,
      requirePayload: true,
      reservationTtlMs: config.reservationTtlMs,
      reconcileIntervalMs: config.reconcileIntervalMs,
      usageSampleIntervalMs: config.usageSampleIntervalMs,
      diagnosticsMaxAgeMs: config.diagnosticsMaxAgeMs,
      releasesMaxAgeMs: config.releasesMaxAgeMs,
      retention: config.retention,
      bodyLimitBytes: config.maxRequestBodySize,
      metricsRegistry: registry,
      ...(volumes === undefined ? {} : { dataPath: config.volumeDataPath }),
      ...(deps.callbackCaPem === undefined ? {} : { callbacks: { extraCaPem: deps.callbackCaPem } }),
    });
    registerVolumeGauges(registry, () => running.usage?.volumeTotals());
    if (ingress) {
      await rebuildRoutes(running, substrate, startup.signal);
      await ingress.activate();
    }
    const imageCollector = startImageCollection(config, running, substrate, {
      docker,
      clock,
      logger,
      registry,
    });
    if (imageCollector !== undefined) releases.defer("image collector", () => imageCollector.stop());
    return Object.assign(running, { substrate, ingress, imageCollector, egress });
  } catch (err) {
    // One stack: the contract server (if up), the substrate and the ingress, in reverse order.
    await releases.close().catch(() => {});
    throw err;
  }
}

/**
 * The image ledger writes to the journal from now on (uses recorded by the first recovery
 * pass are written now); the sweep runs now and every `image_gc_interval` unless
 * `image_gc_after` is 0.
 */
function startImageCollection(
  config: DockerBackendConfig,
  running: RunningBackend,
  substrate: DockerSubstrate,
  deps: { docker: Docker; clock: Clock; logger: Logger; registry: Registry },
): ImageCollector | undefined {
  substrate.imageLedger.bind(running.journal);
  const { afterMs, intervalMs, highWaterPercent, lowWaterPercent } = config.imageGc;
  if (afterMs === 0) return undefined;
  const collector = new ImageCollector({
    docker: deps.docker,
    clock: deps.clock,
    log: deps.logger,
    registry: deps.registry,
    policy: { afterMs, highWaterPercent, lowWaterPercent },
    intervalMs,
    ledger: substrate.imageLedger,
    gate: substrate.imageGate,
    imagesOf: (manifest) => Object.values(parseTenantManifest(manifest).services).map((s) => s.image),
  });
  collector.start();
  return collector;
}

/** The proxy's routes are derived state: every ready lease in the journal gets its routes back. */
async function rebuildRoutes(running: RunningBackend, substrate: DockerSubstrate, signal: AbortSignal) {
  for (const lease of running.journal.listLeases(undefined, undefined)) {
    if (lease.status !== "ready" || lease.payload === undefined) continue;
    let manifest: ReturnType<typeof parseTenantManifest> | undefined;
    try {
      manifest = parseTenantManifest(lease.payload);
    } catch {
      continue;
    }
    await substrate.routeLease(
      {
        leaseUuid: lease.leaseUuid,
        tenant: lease.tenant,
        items: lease.items,
        manifest,
        release: lease.release,
      },
      signal,
    );
  }
}
