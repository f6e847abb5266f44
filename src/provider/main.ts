import { SECP256K1_VERIFIER } from "../auth/secp256k1.ts";
import { TxMetrics } from "../chain/cosmos/tx-pipeline.ts";
import { registerChainMetrics } from "../chain/metrics.ts";
import { AckBatcher } from "../chain/tx/ack-batcher.ts";
import { KeyedMutex, ReleaseStack } from "../core/async/index.ts";
import { systemClock } from "../core/clock.ts";
import { armFailpoints } from "../failpoints.ts";
import { createLogger } from "../log.ts";
import { EventHub, TenantApi } from "./api/index.ts";
import {
  closeBackendClients,
  createBackendCallMetrics,
  createBackendClients,
  registerFleetGauges,
} from "./backend-client/index.ts";
import { closedByMonitor, createBilling, creditNotices } from "./billing/index.ts";
import { openChainSession, providerEventFeed } from "./chain-session.ts";
import { type ProviderConfig, withBoundCallbackBase } from "./config/index.ts";
import {
  bindOperatorListener,
  DashboardActivity,
  dashboardTestTiming,
  serveDashboard,
} from "./dashboard/index.ts";
import { serveThrough } from "./ha/inbox.ts";
import { soleLeader } from "./ha/leadership.ts";
import { startReplicatedProviderd } from "./ha/replicated.ts";
import { bindApiSocket } from "./http/bind.ts";
import { createHealthGauge } from "./http/health.ts";
import { listenerOptions } from "./http/listener.ts";
import { createProviderMetrics, registerStateGauges } from "./http/metrics.ts";
import { buildHttpServer } from "./http/server.ts";
import { Lifecycle } from "./lifecycle/index.ts";
import { Maintenance } from "./maintenance/index.ts";
import { controlSocketPath, listenControlSocket, Reconciler } from "./reconciler/index.ts";
import { Restorer } from "./retention/index.ts";
import { Router } from "./router.ts";
import type { DaemonParts, ProviderdOptions, ProviderdState, RunningProviderd } from "./running.ts";
import { shutDown } from "./shutdown.ts";
import { registerProviderBalance, registerSignerMetrics, startSigners } from "./signers/index.ts";
import { scheduleSnapshots, sqliteStores } from "./store/index.ts";
import { UsageMetricsPoll } from "./usage-metrics/index.ts";

export type { DaemonParts, ProviderdOptions, ProviderdState, RunningProviderd } from "./running.ts";

/**
 * providerd's composition root: the only place that opens the stores, binds the API port,
 * unlocks the key, connects to the chain and wires the lifecycle. It builds each component
 * once, in dependency order, and pushes what it acquired onto one release stack.
 * `startProviderd` is what the CLI and the tests call; `stop()` shuts down in reverse
 * order within shutdown_timeout (intake first, then draining, then force).
 */
export async function startProviderd(
  fileConfig: ProviderConfig,
  opts: ProviderdOptions,
): Promise<RunningProviderd> {
  if (fileConfig.databaseUrl !== undefined) return startReplicatedProviderd(fileConfig, opts, startDaemon);
  return startDaemon(fileConfig, opts, { stores: sqliteStores(fileConfig), leadership: soleLeader() });
}

/** The composition itself (see startProviderd). */
export async function startDaemon(
  fileConfig: ProviderConfig,
  opts: ProviderdOptions,
  parts: DaemonParts,
): Promise<RunningProviderd> {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger("providerd", fileConfig.logLevel);
  const releases = new ReleaseStack((err, resource) =>
    logger.warn({ err, resource }, "releasing a resource failed; the rest are still released"),
  );
  const part = (component: string) => logger.child({ component });
  let state: ProviderdState = "starting";
  try {
    const crashPoints = armFailpoints(opts.env.FRED_FAILPOINTS);
    if (crashPoints.length > 0) logger.warn({ failpoints: crashPoints }, "crash points armed (tests only)");
    const { placement, payloads, tokens, snapshots: snapshotSources } = await parts.stores(releases);
    // Each part takes the room of the placement store it works in.
    const { placements: store, fleet } = placement;
    const listener = listenerOptions(fileConfig);
    const socket = releases.use(
      "API socket",
      parts.apiSocket ??
        (await bindApiSocket(fileConfig.apiListenAddr, listener.tls === undefined ? "http" : "https")),
    );
    // The operator dashboard's port and token: a taken port or a refused token file stops here.
    const operator = await bindOperatorListener(fileConfig, part("dashboard"));
    if (operator !== undefined) releases.use("operator socket", operator.socket);
    // Without callback_base_url the base is this bound URL, known before anything is built.
    const config = withBoundCallbackBase(fileConfig, socket.url);

    const txMetrics = new TxMetrics();
    const chain = await openChainSession(config, opts.env, clock, part("chain"), txMetrics);
    releases.defer("chain client", () => chain.disconnect());

    // Built before the clients, which report every call to it.
    const metrics = createProviderMetrics();
    const clients = await createBackendClients(
      config,
      fleet.pins(),
      clock,
      createBackendCallMetrics(metrics.registry),
    );
    releases.defer("backend clients", () => closeBackendClients(clients));
    const router = new Router({ backends: config.backends, clock });
    // With sub_signer_count > 0 each ack lane is a sub-signer (converged before lease work).
    const signers = await startSigners({
      config,
      mnemonic: opts.env.FRED_MNEMONIC,
      chain,
      clock,
      logger: part("signers"),
    });
    releases.defer("signers", () => signers.stop());
    const acks = releases.use(
      "ack batcher",
      new AckBatcher({ chain, clock, lanes: signers.lanes, logger: part("acks") }),
    );
    const feed = providerEventFeed(config, chain, clock, part("feed"));
    const consumer = feed.subscribe("lifecycle", 10_000);
    releases.defer("event feed", () => feed.stop());

    registerChainMetrics(metrics.registry, { feed: () => feed.metrics(), tx: txMetrics });
    registerSignerMetrics(metrics.registry, signers);
    registerProviderBalance(metrics.registry, {
      address: config.providerAddress,
      denom: config.feeDenom,
      read: (address, denom, signal) => chain.balance(address, denom, signal),
      clock,
      logger: part("signers"),
    });
    const activity = new DashboardActivity(clock);
    const queue = new KeyedMutex();
    const deps = { config, chain, store, fleet, payloads, clients, router, acks, queue, clock };
    const leadership = parts.leadership;
    const lc = new Lifecycle({
      ...deps,
      logger: part("lifecycle"),
      observe: operator === undefined ? metrics.observer : activity.tap(metrics.observer),
    });
    const maintenance = new Maintenance({
      ...deps,
      logger: part("maintenance"),
      registry: metrics.registry,
    });
    const heap = opts.heap;
    const recovery = new Reconciler({
      ...deps,
      lifecycle: lc,
      afterSweep: (signal) => maintenance.recover(signal),
      ...(heap === undefined ? {} : { whileSweeping: (sweep) => heap.uncapped(sweep) }),
      feedLive: (signal) => feed.whenState("live", signal),
      logger: part("reconciler"),
      registry: metrics.registry,
    });
    registerStateGauges(metrics.registry, {
      records: () => store.counts(),
      awaitingPayload: () => lc.awaitingPayload,
      payloadsStored: async () => (await payloads?.count()) ?? 0,
      backendHealthy: () => recovery.backendHealthy,
      queueDepths: () => ({ lease: queue.depth, ack: acks.queued, feed: consumer.queued }),
      feed: () => feed.metrics(),
      now: () => clock.now(),
      leadership: () => leadership.current(),
    });
    registerFleetGauges(metrics.registry, {
      backends: config.backends,
      clients,
      routingFallbacks: () => router.fallbacks,
    });

    const hub = new EventHub({ clock });
    releases.defer("event hub", () => hub.close());
    const billing = createBilling({
      config,
      chain,
      clock,
      logger: part("billing"),
      registry: metrics.registry,
      consumer: feed.subscribe("credit", 1_000),
      notices: creditNotices(hub),
      leaseClosed: (leaseUuid, tenant) => lc.onEvent(closedByMonitor(config.providerUuid, leaseUuid, tenant)),
    });
    releases.defer("billing", () => billing.stop());
    const tenant = releases.use(
      "tenant API",
      new TenantApi({
        ...deps,
        tokens,
        hub,
        logger: part("tenant-api"),
        payloadStored: (lease) => lc.payloadUploaded(lease),
        restorer: new Restorer({ ...deps, logger, observe: metrics.observer }, (l) => lc.provisioning(l)),
        credit: (tenantAddress, signal) => billing.monitor.status(tenantAddress, signal),
        maintenance,
        callbacks: lc,
        requestTimeoutMs: config.httpReadTimeoutMs + config.httpWriteTimeoutMs,
        blocks: feed,
        registry: metrics.registry,
      }),
    );
    const { app, reloadTls } = buildHttpServer({
      health: {
        ...deps,
        tokens,
        inFlight: () => lc.provisionsInFlight + store.counts().attempts,
        leadership,
        feedLive: () => feed.state === "live",
        recoveryDone: () => recovery.done,
        inventory: () => recovery.inventoryReadiness,
        gauge: createHealthGauge(metrics.registry),
      },
      workloads: { config, store, clients, clock },
      tenant,
      callbacks: {
        backends: config.backends,
        pins: fleet.pins(),
        legacySecret: config.callbackSecret,
        canonicalPathPrefix: config.callbackCanonicalPathPrefix,
        clock,
        logger: part("callbacks"),
        lifecycle: lc,
        observe: metrics.observer.callback,
        rateLimit: { rps: config.callbackRateLimitRps, burst: config.callbackRateLimitBurst },
      },
      metrics: metrics.registry,
      listener,
      clock,
      logger: part("http"),
    });
    await socket.serve(app);
    releases.defer("HTTP server", () => app.close());
    const dashboard =
      operator === undefined
        ? undefined
        : await serveDashboard(
            operator,
            {
              config,
              clock,
              logger: part("dashboard"),
              chain,
              store,
              fleet,
              clients,
              feed: () => feed.metrics(),
              backendHealthy: () => recovery.backendHealthy,
              lastSweep: () => recovery.lastSweep,
              registry: metrics.registry,
              awaitingPayload: () => lc.awaitingPayload,
              maintenance: maintenance.journal,
            },
            { activity, ...dashboardTestTiming(opts.env, part("dashboard")) },
          );
    if (dashboard !== undefined) releases.defer("operator dashboard", () => dashboard.close());
    // Routing loads and GET /v1/provider; a backend that answers again may trigger a sweep.
    const stopStats = router.pollStats(
      clients,
      opts.statsIntervalMs ?? 15_000,
      (readings) => {
        tenant.backends.record(readings);
        dashboard?.context.recordStats(readings);
        recovery.observeReadings(readings, lc.signal);
      },
      lc.signal,
    );
    releases.defer("stats poll", stopStats);
    // lease_usage_metrics: per-lease usage series on /metrics; off, nothing polls.
    if (config.leaseUsageMetrics) {
      const usage = new UsageMetricsPoll({
        backends: config.backends,
        clients,
        registry: metrics.registry,
        clock,
        logger: part("usage-metrics"),
      });
      usage.start();
      releases.defer("usage metrics poll", () => usage.stop());
    }
    // `fred providerd reconcile`: the operator's sweep over a 0600 unix socket beside the store.
    const control = await listenControlSocket(
      controlSocketPath(config.stateDir),
      () => recovery.sweep(lc.signal),
      part("control"),
    );
    releases.use("control socket", control);

    state = "recovering";
    feed.start();
    lc.start(consumer, (signal) => recovery.sweep(signal));
    billing.start();
    const snapshots =
      snapshotSources === undefined
        ? undefined
        : scheduleSnapshots(config, snapshotSources, clock, {
            logger: part("snapshots"),
            registry: metrics.registry,
          });
    if (snapshots !== undefined) releases.defer("snapshot schedule", () => snapshots.stop());
    // The startup pass runs once the feed is subscribed (events meanwhile wait in the
    // consumer's queue), and repeats with backoff until every backend has answered.
    recovery.untilComplete(lc.signal).then(
      () => {
        if (state === "recovering") state = "running";
        // Which library checks tenant signatures: OpenSSL instead of libsecp256k1 (no addon
        // for this platform) costs about five times the CPU per fresh token.
        logger.info(
          { url: socket.url, signature_verifier: SECP256K1_VERIFIER },
          "providerd recovered and running",
        );
      },
      (err: unknown) => {
        if (!lc.signal.aborted) logger.error({ err }, "startup recovery stopped");
      },
    );

    let stopping: Promise<void> | undefined;
    return {
      url: socket.url,
      operatorUrl: operator?.url,
      get state() {
        return state;
      },
      lifecycle: lc,
      reloadTls: () => {
        const operatorReloaded = dashboard?.reloadTls() ?? false;
        return reloadTls() || operatorReloaded;
      },
      reconcile: () => recovery.sweep(lc.signal),
      serveRelayed: (r) => serveThrough(app, r),
      stop() {
        const drain = async () => {
          state = "stopping";
          await feed.stop();
          await billing.stop();
          await lc.stop(config.shutdownTimeoutMs);
        };
        stopping ??= shutDown(releases, drain, config.shutdownTimeoutMs, clock, logger).finally(() => {
          state = "stopped";
        });
        return stopping;
      },
    };
  } catch (err) {
    await releases.close().catch(() => {});
    throw err;
  }
}
