import type { AddressInfo } from "node:net";
import { type CosmosChain, openCosmosChain } from "../chain/cosmos/adapter.ts";
import { signerFromKey } from "../chain/cosmos/signer.ts";
import { TxMetrics } from "../chain/cosmos/tx-pipeline.ts";
import { EventFeed } from "../chain/events/feed.ts";
import { Keyring } from "../chain/keyring/index.ts";
import { registerChainMetrics } from "../chain/metrics.ts";
import { AckBatcher } from "../chain/tx/ack-batcher.ts";
import { KeyedMutex } from "../core/async/index.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import { FredError } from "../core/errors.ts";
import { createLogger, type Logger } from "../log.ts";
import { Maintenance, TenantApi } from "./api/index.ts";
import { type BackendClient, closeBackendClients, createBackendClients } from "./backend-client/index.ts";
import { closedByMonitor, createBilling, creditNotices } from "./billing/index.ts";
import { type ProviderConfig, withBoundCallbackBase } from "./config/index.ts";
import { armFailpoints } from "./failpoints.ts";
import type { HeapPolicy } from "./heap-policy.ts";
import { createHealthGauge } from "./http/health.ts";
import { listenerOptions } from "./http/listener.ts";
import { createProviderMetrics } from "./http/metrics.ts";
import { buildHttpServer } from "./http/server.ts";
import { endLeasesOnLostBackends, Lifecycle, type LifecycleDeps } from "./lifecycle/index.ts";
import { controlSocketPath, listenControlSocket, Reconciler, type SweepReport } from "./reconciler/index.ts";
import { Restorer } from "./retention/index.ts";
import { Router } from "./router.ts";
import { registerSignerMetrics, startSigners } from "./signers/index.ts";
import { PayloadStore, PlacementStore, SnapshotSchedule, TokenTracker } from "./store/index.ts";

/**
 * providerd's composition root: the only place that opens the stores, unlocks the key,
 * connects to the chain, binds the HTTP port and wires the lifecycle. `startProviderd`
 * is what the CLI and the tests call; `stop()` shuts down in reverse order within
 * shutdown_timeout (intake first, then draining, then force).
 */
export interface ProviderdOptions {
  /**
   * Environment for secrets (FRED_KEYRING_PASSPHRASE, FRED_MNEMONIC for sub-signers) and
   * test crash points (FRED_FAILPOINTS).
   */
  env: Record<string, string | undefined>;
  clock?: Clock;
  logger?: Logger;
  /** How often backend `/stats` are read for routing (default 15 s). */
  statsIntervalMs?: number;
  /** The process's heap policy (the CLI starts it): reconciler sweeps run uncapped. */
  heap?: HeapPolicy | undefined;
}

export type ProviderdState = "starting" | "recovering" | "running" | "stopping" | "stopped";

export interface RunningProviderd {
  url: string;
  readonly state: ProviderdState;
  readonly lifecycle: Lifecycle;
  /** Serves the TLS certificate files' current content (SIGHUP); false when refused or plain HTTP. */
  reloadTls(): boolean;
  /** A reconciler sweep now, or the one queued after the running sweep (SIGUSR1, tests). */
  reconcile(): Promise<SweepReport>;
  stop(): Promise<void>;
}

export function listenTarget(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(":");
  const host = addr.slice(0, i).replace(/^\[(.*)\]$/, "$1");
  return { host: host === "" ? "0.0.0.0" : host, port: Number(addr.slice(i + 1)) };
}

async function unlockProviderKey(config: ProviderConfig, env: ProviderdOptions["env"]): Promise<Uint8Array> {
  const keyring = new Keyring({
    dir: config.keyringDir,
    backend: config.keyringBackend,
    passphrase: env.FRED_KEYRING_PASSPHRASE,
    prefix: config.bech32Prefix,
  });
  const key = await keyring.unlock(config.keyName);
  if (key.address !== config.providerAddress) {
    throw new FredError(
      "ERR_PROVIDER_KEY_MISMATCH",
      `key ${config.keyName} is ${key.address}, but provider_address is ${config.providerAddress}`,
    );
  }
  return key.privateKey;
}

export async function startProviderd(
  config: ProviderConfig,
  opts: ProviderdOptions,
): Promise<RunningProviderd> {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger("providerd", config.logLevel);
  let state: ProviderdState = "starting";
  const cleanup: (() => Promise<void> | void)[] = [];
  const unwind = async () => {
    for (const fn of cleanup.reverse()) await Promise.resolve(fn()).catch(() => {});
  };
  try {
    const crashPoints = armFailpoints(opts.env.FRED_FAILPOINTS);
    if (crashPoints.length > 0) logger.warn({ failpoints: crashPoints }, "crash points armed (tests only)");
    const store = PlacementStore.open(config.placementStoreDbPath, config.providerUuid);
    cleanup.push(() => store.close());
    const payloads =
      config.payloadStoreDbPath === undefined ? undefined : PayloadStore.open(config.payloadStoreDbPath);
    if (payloads !== undefined) cleanup.push(() => payloads.close());
    const tokens =
      config.tokenTrackerDbPath === undefined ? undefined : TokenTracker.open(config.tokenTrackerDbPath);
    if (tokens !== undefined) cleanup.push(() => tokens.close());

    const privateKey = await unlockProviderKey(config, opts.env);
    const txMetrics = new TxMetrics();
    const chain: CosmosChain = await openCosmosChain({
      rpcUrl: config.rpcUrl,
      chainId: config.chainId,
      signer: signerFromKey(privateKey, config.bech32Prefix),
      gas: {
        gasLimit: config.gasLimit,
        gasAdjustment: config.gasAdjustment,
        maxGasLimit: config.maxGasLimit,
        gasPrice: config.gasPrice,
        feeDenom: config.feeDenom,
      },
      txTimeoutMs: config.txTimeoutMs,
      txPollIntervalMs: config.txPollIntervalMs,
      queryPageLimit: config.queryPageLimit,
      withdrawLimit: config.withdrawLimit,
      maxWithdrawIterations: config.maxWithdrawIterations,
      clock,
      logger: logger.child({ component: "chain" }),
      metrics: txMetrics,
    });
    cleanup.push(() => chain.disconnect());
    const network = await chain.network();
    if (network !== config.chainId) {
      throw new FredError(
        "ERR_CHAIN_ID_MISMATCH",
        `chain_id is ${config.chainId}, but the node at ${config.rpcUrl} serves ${network}`,
      );
    }

    const clients: Map<string, BackendClient> = await createBackendClients(config, store.pins(), clock);
    cleanup.push(() => closeBackendClients(clients));
    const router = new Router({ backends: config.backends, clock });
    // With sub_signer_count > 0 each ack lane is a sub-signer (converged before lease work).
    const signers = await startSigners({
      config,
      mnemonic: opts.env.FRED_MNEMONIC,
      chain,
      clock,
      logger: logger.child({ component: "signers" }),
    });
    cleanup.push(() => signers.stop());
    const acks = new AckBatcher({
      chain,
      clock,
      lanes: signers.lanes,
      logger: logger.child({ component: "acks" }),
    });
    cleanup.push(() => acks.close());

    const feed = new EventFeed({
      url: config.websocketUrl,
      providerUuid: config.providerUuid,
      clock,
      pingIntervalMs: config.websocketPingIntervalMs,
      reconnectInitialMs: config.websocketReconnectInitialMs,
      reconnectMaxMs: config.websocketReconnectMaxMs,
      fetchBlockEvents: (height, signal) => chain.blockEvents(height, signal),
      // Custom-domain changes reach the owner backend in seconds, not at the next sweep.
      customDomains: true,
      logger: logger.child({ component: "feed" }),
    });
    const consumer = feed.subscribe("lifecycle", 10_000);
    cleanup.push(() => feed.stop());

    // The gauges below read the lifecycle and recovery built further down (at scrape time only).
    const metrics = createProviderMetrics({
      leaseStates: () => {
        const c = store.counts();
        return {
          confirmed: c.placements,
          conflict: c.conflicts,
          attempt: c.attempts,
          awaiting_payload: lc.awaitingPayload,
        };
      },
      backendHealthy: () => recovery.backendHealthy,
      queueDepths: () => ({
        lease: deps.queue.depth,
        ack: acks.queued,
        feed: consumer.queued,
      }),
      feed: () => feed.metrics(),
      now: () => clock.now(),
    });
    registerChainMetrics(metrics.registry, { feed: () => feed.metrics(), tx: txMetrics });
    registerSignerMetrics(metrics.registry, signers);

    const deps: LifecycleDeps = {
      config,
      chain,
      store,
      payloads,
      clients,
      router,
      acks,
      queue: new KeyedMutex(),
      clock,
      logger: logger.child({ component: "lifecycle" }),
      observe: metrics.observer,
    };
    const lc = new Lifecycle(deps);
    const maintenance = new Maintenance({
      // Read through deps: the callback base is bound once the listener has its port.
      get config() {
        return deps.config;
      },
      store,
      payloads,
      clients,
      chain,
      queue: deps.queue,
      clock,
      logger: logger.child({ component: "maintenance" }),
      provisioningStarted: (lease) => lc.provisioning(lease) || store.hasAttempt(lease),
      // Called only once requests flow (after `tenant` below exists).
      publish: (lease, status) => void tenant.events.publish(lease, status),
      registry: metrics.registry,
    });
    const heap = opts.heap;
    const recovery = new Reconciler({
      afterSweep: (signal) => maintenance.recover(signal),
      ...(heap === undefined ? {} : { whileSweeping: (sweep) => heap.uncapped(sweep) }),
      config,
      chain,
      store,
      payloads,
      clients,
      acks,
      lifecycle: lc,
      feedLive: (signal) => feed.whenState("live", signal),
      clock,
      logger: logger.child({ component: "reconciler" }),
      registry: metrics.registry,
    });

    const billing = createBilling({
      config,
      chain,
      clock,
      logger: logger.child({ component: "billing" }),
      registry: metrics.registry,
      consumer: feed.subscribe("credit", 1_000),
      // Called only once the scheduler runs (after `tenant` below exists).
      notices: creditNotices(() => tenant.hub),
      leaseClosed: (leaseUuid, tenant) => lc.onEvent(closedByMonitor(config.providerUuid, leaseUuid, tenant)),
    });

    const tenant = new TenantApi({
      config,
      chain,
      store,
      payloads,
      tokens,
      clients,
      clock,
      logger: logger.child({ component: "tenant-api" }),
      provisioningStarted: (lease) => lc.provisioning(lease) || store.hasAttempt(lease),
      payloadStored: (lease) => lc.payloadUploaded(lease),
      restorer: new Restorer(deps, (lease) => lc.provisioning(lease)),
      credit: (tenantAddress, signal) => billing.monitor.status(tenantAddress, signal),
      maintenance,
      requestTimeoutMs: config.httpReadTimeoutMs + config.httpWriteTimeoutMs,
      blocks: {
        live: () => feed.state === "live",
        onBlock: (listener) => {
          feed.on("block", listener);
          return () => feed.off("block", listener);
        },
      },
    });
    cleanup.push(() => tenant.close());
    const listener = listenerOptions(config);
    const { app, reloadTls } = buildHttpServer({
      health: {
        config,
        chain,
        clients,
        store,
        payloads,
        tokens,
        inFlight: () => lc.provisionsInFlight + store.counts().attempts,
        feedLive: () => feed.state === "live",
        recoveryDone: () => recovery.done,
        inventory: () => recovery.inventoryReadiness,
        gauge: createHealthGauge(metrics.registry),
      },
      workloads: { config, store, clients },
      tenant,
      callbacks: {
        backends: config.backends,
        pins: store.pins(),
        legacySecret: config.callbackSecret,
        canonicalPathPrefix: config.callbackCanonicalPathPrefix,
        clock,
        logger: logger.child({ component: "callbacks" }),
        apply: async (cb) => {
          if (state !== "running" && state !== "recovering")
            throw new FredError("ERR_NOT_READY", `providerd is ${state}; callbacks are not applied now`);
          const result = await lc.applyCallback(cb);
          tenant.events.callbackApplied(cb, result);
          return result;
        },
        observe: (outcome) => metrics.observer.callback(outcome),
        rateLimit: { rps: config.callbackRateLimitRps, burst: config.callbackRateLimitBurst },
      },
      metrics: metrics.registry,
      listener,
      clock,
      logger: logger.child({ component: "http" }),
    });
    const target = listenTarget(config.apiListenAddr);
    await app.listen({ host: target.host, port: target.port });
    cleanup.push(() => app.close());
    const address = app.server.address() as AddressInfo;
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
    const scheme = listener.tls === undefined ? "http" : "https";
    const url = `${scheme}://${host === "0.0.0.0" ? "127.0.0.1" : host}:${address.port}`;
    // Without callback_base_url (port 0) the base is this bound URL; nothing builds a callback
    // URL before lc.start() below.
    deps.config = withBoundCallbackBase(config, url);

    // Routing loads and GET /v1/provider: read /stats now and then; a failed read drops that
    // backend's load signal and marks it unreachable.
    let cancelStats: (() => void) | undefined;
    cleanup.push(() => cancelStats?.());
    const refreshStats = (): Promise<void> =>
      router
        .refreshLoads(clients, lc.signal)
        .then((readings) => {
          tenant.backends.record(readings);
          for (const [name, stats] of readings) recovery.observeHealth(name, stats !== undefined, lc.signal);
        })
        .finally(() => {
          if (!lc.signal.aborted && state !== "stopping") {
            cancelStats = clock.setTimer(opts.statsIntervalMs ?? 15_000, () => void refreshStats());
          }
        });
    void refreshStats();

    // Every sweep is followed by the pass that ends the leases of backends retired as lost.
    // With none retired no row can name one: the pass (a read of every placement) is skipped.
    const endLost = async (signal: AbortSignal) => {
      if (!deps.store.anyLost) return;
      await endLeasesOnLostBackends(deps, signal).then(
        (r) => {
          if (r.closed.length + r.rejected.length + r.pruned.length + r.failed.length > 0)
            logger.info(r, "leases on lost backends");
        },
        (err: unknown) => {
          if (!signal.aborted) logger.error({ err }, "lost-backend pass failed");
        },
      );
    };
    const sweep = async (signal: AbortSignal): Promise<SweepReport> => {
      const report = await recovery.sweep(signal);
      await endLost(signal);
      return report;
    };

    // `fred providerd reconcile`: the operator's sweep over a 0600 unix socket beside the store.
    const control = await listenControlSocket(
      controlSocketPath(config.placementStoreDbPath),
      () => sweep(lc.signal),
      logger.child({ component: "control" }),
    );
    cleanup.push(() => control.close());

    state = "recovering";
    feed.start();
    lc.start(consumer, sweep);
    billing.start();
    cleanup.push(() => billing.stop());
    if (config.placementSnapshotDir !== "") {
      const snapshots = new SnapshotSchedule({
        dir: config.placementSnapshotDir,
        intervalMs: config.placementSnapshotIntervalMs,
        retain: config.placementSnapshotRetain,
        sources: { placement: store, payload: payloads },
        clock,
        logger: logger.child({ component: "snapshots" }),
        registry: metrics.registry,
      });
      snapshots.start();
      cleanup.push(() => snapshots.stop());
    }
    // The startup pass runs once the feed is subscribed (events meanwhile wait in the
    // consumer's queue), and repeats with backoff until every backend has answered.
    recovery.untilComplete(lc.signal).then(
      () => {
        if (state === "recovering") state = "running";
        logger.info({ url }, "providerd recovered and running");
        void endLost(lc.signal);
      },
      (err: unknown) => {
        if (!lc.signal.aborted) logger.error({ err }, "startup recovery stopped");
      },
    );

    let stopping: Promise<void> | undefined;
    return {
      url,
      get state() {
        return state;
      },
      lifecycle: lc,
      reloadTls,
      reconcile: () => sweep(lc.signal),
      stop() {
        stopping ??= (async () => {
          state = "stopping";
          // Timers from the Clock are unref'd (a daemon must not be held open by them); while
          // shutting down, this handle keeps the process alive until the sequence finishes.
          const keepAlive = setInterval(() => {}, 1_000);
          // Phase 1: stop intake and drain lease work, bounded by shutdown_timeout.
          await feed.stop();
          await billing.stop();
          await lc.stop(config.shutdownTimeoutMs);
          // Phase 2: flush acknowledgements and close everything; past the deadline,
          // whatever is still closing is abandoned (the process is about to exit).
          let cancel: (() => void) | undefined;
          const deadline = new Promise<void>((resolve) => {
            cancel = clock.setTimer(config.shutdownTimeoutMs, () => {
              logger.warn("shutdown_timeout reached; closing the rest forcibly");
              resolve();
            });
          });
          await Promise.race([unwind(), deadline]);
          cancel?.();
          clearInterval(keepAlive);
          state = "stopped";
        })();
        return stopping;
      },
    };
  } catch (err) {
    await unwind();
    throw err;
  }
}
