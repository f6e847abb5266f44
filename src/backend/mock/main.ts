import { ReleaseStack } from "../../core/async/index.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { parseTenantManifest, type RunningBackend, startBackend } from "../kit/index.ts";
import type { MockBackendConfig } from "./config.ts";
import { hangExecUpgrades, hangInventoryReads, hangUsageReads } from "./hang-inventory.ts";
import { registerLogRoute } from "./log-route.ts";
import { registerLoseRoute } from "./lose-route.ts";
import { MockSubstrate } from "./substrate.ts";
import { registerUsageDriveRoute } from "./usage-route.ts";

/**
 * Composition root of `fred backend mock`: the real kit on a fake substrate. Without a
 * journal path the journal lives in memory and is bound to the configured storage id at
 * start; with one, it is bound on first start and verified on every later start.
 */
export async function startMockBackend(
  config: MockBackendConfig,
  deps: {
    logger: Logger;
    clock?: Clock /** fred up's local CA, for HTTPS callbacks. */;
    callbackCaPem?: string;
  },
): Promise<RunningBackend> {
  const clock = deps.clock ?? systemClock;
  const substrate = new MockSubstrate({
    clock,
    backendName: config.name,
    delayMs: config.delayMs,
    failRate: config.failRate,
    failLeases: config.failLeases,
    hangLeases: config.hangLeases,
    retainedDiskMb: config.retainedDiskMb,
    hangRetention: config.hangRetention,
    statePath: config.dbPath === undefined ? undefined : `${config.dbPath}.substrate`,
    skus: config.skus,
    usage: config.usage,
    logIntervalMs: config.logIntervalMs,
  });
  const releases = new ReleaseStack((err, resource) =>
    deps.logger.warn({ err, resource }, "releasing a backend resource failed"),
  );
  releases.use("substrate", substrate);
  // On a failed start the kit closes the stack, substrate included.
  return startBackend({
    name: config.name,
    substrate,
    releases,
    journal: {
      path: config.dbPath ?? ":memory:",
      mode: "bind-or-verify",
      storageId: config.storageId,
      maintenanceReceipts: config.maintenanceReceipts,
    },
    logger: deps.logger,
    clock,
    secret: config.secret,
    previousSecret: config.previousSecret,
    listen: config.listen,
    https: config.tls,
    routes: (app, engine) => {
      registerLoseRoute(substrate)(app, engine);
      registerUsageDriveRoute(substrate)(app);
      registerLogRoute(substrate, config.hangLogFollow)(app, engine);
      if (config.hangInventory) hangInventoryReads(app);
      if (config.hangUsage) hangUsageReads(app);
      if (config.hangExec) hangExecUpgrades(app);
    },
    resolveSku: substrate.resolveSku.bind(substrate),
    pool: { totals: config.capacity },
    allowedRegistries: config.allowedRegistries,
    parseManifest: parseTenantManifest,
    requirePayload: config.requirePayload,
    reservationTtlMs: config.reservationTtlMs,
    reconcileIntervalMs: config.reconcileIntervalMs,
    diagnosticsMaxAgeMs: config.diagnosticsMaxAgeMs,
    ...(config.retention ? { retention: config.retention } : {}),
    releasesMaxAgeMs: config.releasesMaxAgeMs,
    usageSampleIntervalMs: config.usageSampleIntervalMs,
    readTimeoutMs: Math.max(config.readTimeoutMs, config.writeTimeoutMs),
    idleTimeoutMs: config.idleTimeoutMs,
    callbacks: {
      attemptTimeoutMs: config.clientTimeoutMs,
      tlsSkipVerify: config.tlsSkipVerify,
      ...(deps.callbackCaPem === undefined ? {} : { extraCaPem: deps.callbackCaPem }),
    },
  });
}
