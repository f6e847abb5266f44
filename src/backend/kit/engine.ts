// Over 500 lines: the backend engine drives every lease operation (admit, start, settle, maintenance, close, recovery) through one lease queue; its steps read together.

import { KeyedMutex } from "../../core/async/index.ts";
import type { ProvisionRequest } from "../../core/backend-contract/index.ts";
import type { Logger } from "../../log.ts";
import { type AdmissionConfig, admit, prepare, probe, withPinnedImages, workloadSpec } from "./admission.ts";
import { captureLogs, diagnosticsCutoffMs } from "./diagnostics.ts";
import { badRequest } from "./errors.ts";
import type { DiagnosticRecord } from "./journal/diagnostics.ts";
import type { Failure, Journal, LeaseRecord } from "./journal/journal.ts";
import { MaintenanceRunner } from "./maintenance/runner.ts";
import type { DestroyRefusal } from "./ops-metrics.ts";
import type { ResourcePool } from "./resources.ts";
import type { Retention } from "./retention/index.ts";
import { type RuntimeEvent, type Substrate, SubstrateError, substrateOutcomeOf } from "./substrate.ts";
import { teardownFailure, VOLUME_CLEANUP_ATTEMPTS, VOLUME_CLEANUP_EXHAUSTED } from "./teardown-failure.ts";
import { NO_STREAK } from "./terminal-budget.ts";

/**
 * The kit's workflows around one substrate: provision workers (intent → started →
 * substrate → settle), closes, the recovery pass that settles ambiguous intents from
 * what the substrate reports, reservation expiry, and runtime failure observations.
 * HTTP lives elsewhere; this is what the routes call.
 */
export interface EngineConfig extends AdmissionConfig {
  substrate: Substrate;
  logger: Logger;
  reconcileIntervalMs: number;
  /** A lease's last failure stays readable for this long after it was recorded (0: always). */
  diagnosticsMaxAgeMs: number;
  /** Superseded and failed releases are dropped this long after they were created (0: never). */
  releasesMaxAgeMs?: number;
  /** Called after every commit that appended an outbox row. */
  wakeOutbox(lease: string): void;
  /** Retention of closed leases' data (retention/): absent = a close destroys. */
  retention?: Retention | undefined;
  /** An orphan's data kept because nothing proves its lease closed (ops-metrics.ts). */
  onDestroyRefused?: (reason: DestroyRefusal) => void;
}

export type EngineEvent = "recovery:done" | "operation:settled" | "maintenance:settled" | "close:done";

const INTERRUPTED: Failure = { reason: "Interrupted", message: "provisioning was interrupted" };
const EXPIRED: Failure = { reason: "ProvisionTimeout", message: "provisioning did not complete in time" };
const VANISHED: Failure = { reason: "Unknown", message: "workload is no longer running" };

type EngineState = { kind: "new" } | { kind: "running"; stopTimers: () => void } | { kind: "stopped" };

export class BackendEngine {
  readonly #config: EngineConfig;
  /**
   * Every workflow that touches the substrate for one lease (provision, close, recovery)
   * runs under the lease's key, so they never interleave on a lease.
   */
  readonly #gate = new KeyedMutex();
  /** Abort handles of in-flight provision workers, by lease. */
  readonly #live = new Map<string, AbortController>();
  /** Failed teardowns per closing lease, since this process started. */
  readonly #teardownFailures = new Map<string, number>();
  readonly #shutdown = new AbortController();
  readonly #listeners = new Set<(e: EngineEvent, lease?: string) => void>();
  #state: EngineState = { kind: "new" };
  #recovering: Promise<void> | undefined;

  /** Restart and update (POST /restart, /update); runs under the same per-lease gate. */
  readonly maintenance: MaintenanceRunner;

  constructor(config: EngineConfig) {
    this.#config = config;
    this.maintenance = new MaintenanceRunner({
      config,
      gate: this.#gate,
      live: this.#live,
      shutdown: this.#shutdown.signal,
      settled: (lease) => {
        config.wakeOutbox(lease);
        this.#emit("maintenance:settled", lease);
      },
    });
  }

  get journal(): Journal {
    return this.#config.journal;
  }

  get pool(): ResourcePool {
    return this.#config.pool;
  }

  /** What admission reads (restore admission shares it with provision). */
  get admission(): AdmissionConfig {
    return this.#config;
  }

  /** Typed lifecycle events, so tests wait for "recovery:done" instead of sleeping. */
  on(listener: (e: EngineEvent, lease?: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(e: EngineEvent, lease?: string): void {
    for (const l of this.#listeners) l(e, lease);
  }

  /** Rebuilds the books from the journal, runs a first recovery pass, then schedules the loops. */
  async start(): Promise<void> {
    if (this.#state.kind !== "new") throw new Error("engine already started");
    this.#rebuildPool();
    const unsubscribe = this.#config.substrate.subscribe?.((e) => this.#onRuntimeEvent(e)) ?? (() => {});
    let cancelTimer = () => {};
    const schedule = () => {
      cancelTimer = this.#config.clock.setTimer(this.#tickMs(), () => {
        void this.#tick()
          .catch((err) => this.#config.logger.error({ err }, "engine tick failed"))
          .finally(() => {
            if (this.#state.kind === "running") schedule();
          });
      });
    };
    this.#state = {
      kind: "running",
      stopTimers: () => {
        cancelTimer();
        unsubscribe();
      },
    };
    await this.recover();
    schedule();
  }

  async stop(): Promise<void> {
    const s = this.#state;
    this.#state = { kind: "stopped" };
    if (s.kind === "running") s.stopTimers();
    this.#shutdown.abort(new Error("backend stopping"));
    for (const c of this.#live.values()) c.abort(new Error("backend stopping"));
    await this.#recovering?.catch(() => {});
    await this.#gate.idle();
  }

  // ---- provision ----

  async provision(req: ProvisionRequest): Promise<{ operationId: string }> {
    const early = probe(this.#config, req);
    if (early?.kind === "acknowledged") {
      await this.#config.journal.durable(); // the acknowledged intent may still be in the open group
      return { operationId: early.operationId };
    }
    const prepared = prepare(this.#config, req);
    if (this.#config.substrate.validate) {
      const spec = workloadSpec(
        { ...syntheticLease(req, prepared.instances), image: prepared.image },
        this.#config.backendName,
        this.#config.journal.storageId,
        this.#config.parseManifest,
      );
      try {
        await this.#config.substrate.validate(spec, this.#shutdown.signal);
      } catch (err) {
        if (err instanceof SubstrateError && err.validationCode !== undefined) {
          throw badRequest(err.tenantMessage, err.validationCode);
        }
        throw err;
      }
    }
    // Without an await since the probe above, nothing can have changed: skip re-probing.
    const result = admit(this.#config, prepared, this.#config.substrate.validate !== undefined);
    // Dispatched before the wait: on an idle lease the worker marks the intent started in
    // this same turn, so the one fsync the 202 waits for also covers "started", and the
    // first effect waits for no second one. (A crash after that fsync and before any effect
    // finds the intent started: recovery settles it from what the substrate shows.)
    if (result.kind === "admitted") this.#dispatch(result.lease);
    // The 202 promises a durable intent: wait for the group commit before answering.
    await this.#config.journal.durable();
    return { operationId: result.kind === "admitted" ? result.lease.operationId : result.operationId };
  }

  /** Runs an operation admitted elsewhere (a restore) like a provision. */
  startOperation(lease: LeaseRecord): void {
    this.#dispatch(lease);
  }

  #dispatch(lease: LeaseRecord): void {
    const controller = new AbortController();
    this.#live.set(lease.leaseUuid, controller);
    void this.#gate
      .run(lease.leaseUuid, () => this.#runOperation(lease, controller.signal))
      .catch((err) =>
        this.#config.logger.error({ err, lease_uuid: lease.leaseUuid }, "provision worker crashed"),
      )
      .finally(() => {
        if (this.#live.get(lease.leaseUuid) === controller) this.#live.delete(lease.leaseUuid);
      });
  }

  async #runOperation(admitted: LeaseRecord, signal: AbortSignal): Promise<void> {
    // Made only when something is logged: a child logger serializes its bindings when made.
    let child: Logger | undefined;
    const log = () =>
      (child ??= this.#config.logger.child({
        lease_uuid: admitted.leaseUuid,
        operation_id: admitted.operationId,
      }));
    const lease = this.#config.journal.markStarted(admitted.leaseUuid, admitted.generation, admitted);
    if (!lease) return; // the head moved (closed or expired) before any effect
    await this.#config.journal.durable(); // "started" must be durable before the first effect
    const { substrate } = this.#config;
    let spec = workloadSpec(
      lease,
      this.#config.backendName,
      this.#config.journal.storageId,
      this.#config.parseManifest,
      // Only a substrate that resolves images ever pinned any (withPinnedImages).
      substrate.resolveImages === undefined
        ? undefined
        : this.#config.journal.pinnedImages(lease.leaseUuid, lease.release),
    );
    try {
      // A re-provision after a failure: the failed release's containers go first; its
      // volumes stay, holding the tenant's data for this release.
      if (lease.release > 1) {
        await this.#preserveLogs(lease.leaseUuid, signal);
        await substrate.removeWorkload(lease.leaseUuid, signal);
      }
      spec = await withPinnedImages(this.#config.journal, substrate, spec, signal, lease.release > 1);
      await this.#config.retention?.beforeCreate(lease, spec, signal);
      await substrate.create(spec, signal);
      await substrate.start(spec, signal);
      if (this.#config.journal.settleSuccess(lease.leaseUuid, lease.generation, this.#config.clock.now())) {
        this.#config.pool.markRunning(lease.leaseUuid);
        this.#settled(lease.leaseUuid);
        return;
      }
    } catch (err) {
      if (substrateOutcomeOf(err) === "definite" && !signal.aborted) {
        const e = err as SubstrateError;
        log().warn({ reason: e.reason, err: e }, "provision failed");
        // The failed instances are still there (stopped): their logs go with the failure.
        const logs = await captureLogs(substrate, lease.leaseUuid, signal, log(), this.#config.clock);
        const failure =
          (await this.#config.retention?.restoreFailure(lease, failureOf(e), signal)) ?? failureOf(e);
        const now = this.#config.clock.now();
        if (this.#config.journal.settleFailure(lease.leaseUuid, lease.generation, failure, now, logs)) {
          this.#config.pool.release(lease.leaseUuid);
          this.#settled(lease.leaseUuid);
          return;
        }
      } else {
        // Ambiguous: leave the intent pending; recovery classifies it from the substrate.
        log().warn({ err }, "provision outcome ambiguous; left for recovery");
        if (this.#stillOurs(lease)) return;
      }
    }
    // The head moved while we worked (expired or closed): never leave what we made running.
    await this.#cleanupIfStale(lease, log());
  }

  #stillOurs(lease: LeaseRecord): boolean {
    const now = this.#config.journal.getLease(lease.leaseUuid);
    return now?.head === "operation" && now.generation === lease.generation;
  }

  async #cleanupIfStale(lease: LeaseRecord, log: Logger): Promise<void> {
    const current = this.#config.journal.getLease(lease.leaseUuid);
    if (current?.head === "close") return; // the close destroys under the same gate
    if (current?.status === "ready") return;
    // The lease lives on (failed or expired): its volumes stay for a later release or the close.
    await this.#preserveLogs(lease.leaseUuid, this.#shutdown.signal);
    await this.#config.substrate.removeWorkload(lease.leaseUuid, this.#shutdown.signal).catch((err) => {
      log.warn({ err }, "cleanup of a superseded provision failed; recovery retries");
    });
  }

  #settled(lease: string): void {
    this.#config.wakeOutbox(lease);
    this.#emit("operation:settled", lease);
  }

  // ---- close ----

  /** Starts a close and returns once it is durable; teardown continues in the background. */
  async deprovision(leaseUuid: string): Promise<void> {
    const { journal, retention } = this.#config;
    const r = journal.transaction(() => {
      const begun = journal.beginClose(leaseUuid, this.#config.clock.now());
      if (begun.kind === "closing") retention?.onCloseBegun(begun.lease);
      return begun;
    });
    await journal.durable();
    if (r.kind === "tombstoned") return;
    if (r.kind !== "closing") {
      // Nothing known here; remove anything labelled with it anyway (no callback).
      void this.#gate
        .run(leaseUuid, () => this.#config.substrate.destroyLease(leaseUuid, this.#shutdown.signal))
        .catch((err) =>
          this.#config.logger.warn({ err, lease_uuid: leaseUuid }, "teardown of an unknown lease failed"),
        );
      return;
    }
    if (r.preempted) {
      this.#config.wakeOutbox(leaseUuid);
      this.#live.get(leaseUuid)?.abort(new Error("lease closed"));
    }
    // The close is durable: a failure here is logged and the next recovery pass retries it.
    void this.#runClose(leaseUuid).catch((err) =>
      this.#config.logger.error({ err, lease_uuid: leaseUuid }, "close worker crashed; recovery retries"),
    );
  }

  async #runClose(leaseUuid: string): Promise<void> {
    await this.#gate.run(leaseUuid, async () => {
      const lease = this.#config.journal.getLease(leaseUuid);
      if (lease?.head !== "close") return;
      const { journal, retention } = this.#config;
      const signal = this.#shutdown.signal;
      let teardown: { retained: boolean; commit(): void } = { retained: false, commit: () => {} };
      try {
        await this.#preserveLogs(leaseUuid, signal);
        if (retention) teardown = await retention.teardown(lease, signal);
        else await this.#config.substrate.destroyLease(leaseUuid, signal);
      } catch (err) {
        this.#noteTeardownFailure(lease, err);
        return;
      }
      const now = this.#config.clock.now();
      const completed = journal.transaction(() => {
        if (!journal.completeClose(leaseUuid, lease.generation, now, teardown.retained)) return false;
        teardown.commit();
        return true;
      });
      if (completed) {
        this.#teardownFailures.delete(leaseUuid);
        this.#config.pool.release(leaseUuid);
        this.#config.wakeOutbox(leaseUuid);
        this.#emit("close:done", leaseUuid);
      }
    });
  }

  /** Records why the close has not finished; the next recovery pass retries it. */
  #noteTeardownFailure(lease: LeaseRecord, err: unknown): void {
    const attempts = (this.#teardownFailures.get(lease.leaseUuid) ?? 0) + 1;
    this.#teardownFailures.set(lease.leaseUuid, attempts);
    // Exhausted stays exhausted across a restart (the count is this process's own).
    const failure =
      lease.reason === VOLUME_CLEANUP_EXHAUSTED
        ? { reason: lease.reason, message: lease.message ?? "" }
        : teardownFailure(err, attempts);
    this.#config.journal.noteCloseTrouble(lease.leaseUuid, lease.generation, failure);
    const log = { lease_uuid: lease.leaseUuid, reason: failure.reason, attempts, err };
    if (failure.reason === VOLUME_CLEANUP_EXHAUSTED && attempts === VOLUME_CLEANUP_ATTEMPTS)
      this.#config.logger.error(log, "volume cleanup exhausted its attempts; the close keeps retrying");
    else this.#config.logger.warn(log, "teardown failed; will retry");
  }

  // ---- recovery, expiry, supervision ----

  /** One level-triggered pass; concurrent callers share the pass in progress. */
  recover(): Promise<void> {
    this.#recovering ??= this.#recoverOnce().finally(() => {
      this.#recovering = undefined;
      this.#emit("recovery:done");
    });
    return this.#recovering;
  }

  /**
   * A pass that starts after this call: one in progress may have read the substrate
   * before the caller's change, so it is awaited first rather than shared.
   */
  async recoverNow(): Promise<void> {
    await this.#recovering?.catch(() => {});
    await this.recover();
  }

  async #recoverOnce(): Promise<void> {
    const signal = this.#shutdown.signal;
    const { journal, substrate, logger } = this.#config;
    for (const lease of journal.leasesWithHead("operation")) {
      if (this.#live.has(lease.leaseUuid) || signal.aborted) continue;
      if (lease.phase === "before_effects") {
        this.#dispatch(lease); // nothing happened yet: simply run it
        continue;
      }
      await this.#gate.tryRun(lease.leaseUuid, () => this.#classifyStarted(lease.leaseUuid, signal));
    }
    this.maintenance.resume();
    for (const lease of journal.leasesWithHead("close")) {
      if (signal.aborted) return;
      if (!this.#gate.isBusy(lease.leaseUuid)) await this.#runClose(lease.leaseUuid);
    }
    // Only leases already ready before the inventory was taken can be missing from it.
    const readyBefore = new Map<string, number>();
    for (const lease of journal.listLeases(undefined, undefined)) {
      if (lease.status === "ready" && lease.head === "none")
        readyBefore.set(lease.leaseUuid, lease.generation);
    }
    let inventory: Awaited<ReturnType<Substrate["inventory"]>>;
    try {
      inventory = await substrate.inventory(signal);
    } catch (err) {
      logger.warn({ err }, "substrate inventory unavailable; skipping orphan sweep");
      return;
    }
    const seen = new Set<string>();
    for (const obs of inventory) {
      seen.add(obs.leaseUuid);
      if (this.#gate.isBusy(obs.leaseUuid) || signal.aborted) continue;
      const lease = journal.getLease(obs.leaseUuid);
      const stale =
        obs.operationId !== undefined && lease !== undefined && obs.operationId !== lease.operationId;
      if (lease === undefined || (stale && lease.head === "none")) {
        // Volumes go only with a close: a tombstone proves one; anything else keeps them.
        const closed = lease === undefined && journal.isTombstoned(obs.leaseUuid);
        if (!closed && obs.instances.length === 0) continue;
        await this.#gate.tryRun(obs.leaseUuid, async () => {
          if (journal.getLease(obs.leaseUuid)?.head === "operation") return;
          logger.info({ lease_uuid: obs.leaseUuid, closed }, "removing an orphaned workload");
          // Without a tombstone the workload goes but its data stays: that destroy is refused.
          if (!closed) this.#config.onDestroyRefused?.("no_tombstone");
          const removal = closed
            ? substrate.destroyLease(obs.leaseUuid, signal)
            : substrate.removeWorkload(obs.leaseUuid, signal);
          await removal.catch((err) =>
            logger.warn({ err, lease_uuid: obs.leaseUuid }, "orphan removal failed; next pass retries"),
          );
        });
      } else if (lease.status === "ready" && lease.head === "none" && obs.state === "failed") {
        // Found failed after the fact, not seen dying: the platform may have ended it (a
        // host or engine restart), so it never counts toward the terminal budget.
        this.#onRuntimeEvent({
          leaseUuid: obs.leaseUuid,
          operationId: obs.operationId,
          reason: obs.reason ?? VANISHED.reason,
          message: obs.message ?? VANISHED.message,
          platform: true,
        });
      }
    }
    for (const [leaseUuid, generation] of readyBefore) {
      if (seen.has(leaseUuid) || this.#gate.isBusy(leaseUuid)) continue;
      // Still the same ready generation (the journal moves generation on every transition).
      if (journal.getLease(leaseUuid)?.generation !== generation) continue;
      this.#onRuntimeEvent({ leaseUuid, ...VANISHED });
    }
  }

  /** Settles a started intent whose worker is gone, from what the substrate shows now. */
  async #classifyStarted(leaseUuid: string, signal: AbortSignal): Promise<void> {
    const { journal, substrate, clock, logger } = this.#config;
    const lease = journal.getLease(leaseUuid);
    if (lease?.head !== "operation" || lease.phase !== "started") return;
    let obs: Awaited<ReturnType<Substrate["inspect"]>>;
    try {
      obs = await substrate.inspect(leaseUuid, signal);
    } catch {
      return; // still ambiguous: next pass
    }
    const ours =
      obs !== undefined && (obs.operationId === undefined || obs.operationId === lease.operationId);
    if (ours && obs?.state === "running") {
      if (journal.settleSuccess(leaseUuid, lease.generation, clock.now())) {
        this.#config.pool.markRunning(leaseUuid);
        this.#settled(leaseUuid);
      }
      return;
    }
    let logs: Awaited<ReturnType<typeof captureLogs>>;
    if (obs !== undefined) {
      logs = await captureLogs(substrate, leaseUuid, signal, logger, clock);
      try {
        await substrate.removeWorkload(leaseUuid, signal);
      } catch {
        return;
      }
    }
    logger.info({ lease_uuid: leaseUuid }, "settling an interrupted provision as failed");
    const observed =
      obs?.state === "failed" && obs.reason
        ? { reason: obs.reason, message: obs.message ?? "" }
        : INTERRUPTED;
    const failure = (await this.#config.retention?.restoreFailure(lease, observed, signal)) ?? observed;
    if (journal.settleFailure(leaseUuid, lease.generation, failure, clock.now(), logs)) {
      this.#config.pool.release(leaseUuid);
      this.#settled(leaseUuid);
    }
  }

  /** Releases reservations that did not become running in time and fails their intents. */
  expireReservations(): string[] {
    const { journal, pool, clock } = this.#config;
    const expired = pool.expireReservations(clock.now());
    for (const leaseUuid of expired) {
      const lease = journal.getLease(leaseUuid);
      if (lease?.head !== "operation") continue;
      this.#live.get(leaseUuid)?.abort(new Error("reservation expired"));
      if (journal.settleFailure(leaseUuid, lease.generation, EXPIRED, clock.now())) this.#settled(leaseUuid);
    }
    return expired;
  }

  #onRuntimeEvent(e: RuntimeEvent): void {
    const failure: Failure = { reason: e.reason, message: e.message };
    if (e.platform === true) failure.platform = true;
    if (
      this.#config.journal.recordRuntimeFailure(e.leaseUuid, e.operationId, failure, this.#config.clock.now())
    ) {
      this.#config.pool.release(e.leaseUuid);
      this.#config.wakeOutbox(e.leaseUuid);
    }
  }

  /**
   * A restart or update the tenant requested was admitted: the lease's consecutive-failure
   * streak starts over (terminal_budget). Durable when it resolves; false if the lease is
   * not live here.
   */
  async resetTerminalBudget(leaseUuid: string): Promise<boolean> {
    const reset = this.#config.journal.resetFailureStreak(leaseUuid);
    await this.#config.journal.durable();
    return reset;
  }

  /** Drops superseded and failed releases older than releases_max_age; returns how many. */
  expireReleases(): number {
    const maxAge = this.#config.releasesMaxAgeMs ?? 0;
    if (maxAge <= 0) return 0;
    const dropped = this.#config.journal.maintenance.expireReleases(this.#config.clock.now() - maxAge);
    if (dropped > 0) this.#config.logger.debug({ dropped }, "expired old releases");
    return dropped;
  }

  // ---- diagnostics ----

  /** The lease's last recorded failure, unless it is older than diagnostics_max_age. */
  diagnostic(leaseUuid: string): DiagnosticRecord | undefined {
    const d = this.#config.journal.diagnostics.get(leaseUuid);
    const cutoff = diagnosticsCutoffMs(this.#config.clock.now(), this.#config.diagnosticsMaxAgeMs);
    if (d === undefined || (cutoff !== undefined && d.createdAtMs < cutoff)) return undefined;
    return d;
  }

  /**
   * Before a failed lease's workload is removed: captures its logs into the recorded
   * failure if that has none yet (a runtime death, an expiry), durably, so they outlive
   * the removal. Runs under the lease's gate, like the removal that follows.
   */
  async #preserveLogs(leaseUuid: string, signal: AbortSignal): Promise<void> {
    const { journal, substrate, logger } = this.#config;
    const d = journal.diagnostics.get(leaseUuid);
    if (d === undefined || d.logs !== undefined) return;
    const logs = await captureLogs(substrate, leaseUuid, signal, logger, this.#config.clock);
    if (logs === undefined || !journal.diagnostics.attachLogs(leaseUuid, d.createdAtMs, logs)) return;
    await journal.durable();
  }

  #tickMs(): number {
    return Math.max(
      10,
      Math.min(this.#config.reconcileIntervalMs, this.#config.reservationTtlMs / 4, 30_000),
    );
  }

  #lastRecoveryMs = 0;
  async #tick(): Promise<void> {
    this.expireReservations();
    const now = this.#config.clock.now();
    const cutoff = diagnosticsCutoffMs(now, this.#config.diagnosticsMaxAgeMs);
    const expired = cutoff === undefined ? 0 : this.#config.journal.diagnostics.expire(cutoff);
    if (expired > 0) this.#config.logger.debug({ expired }, "expired failure diagnostics");
    this.expireReleases();
    if (now - this.#lastRecoveryMs >= this.#config.reconcileIntervalMs) {
      this.#lastRecoveryMs = now;
      await this.recover().catch((err) => this.#config.logger.error({ err }, "recovery pass failed"));
    }
  }

  #rebuildPool(): void {
    const { journal, pool, reservationTtlMs } = this.#config;
    for (const lease of journal.listLeases(undefined, undefined)) {
      if (lease.status === "failed") continue;
      const reserved = lease.head === "operation";
      pool.allocate(
        lease.leaseUuid,
        lease.tenant,
        lease.instances,
        reserved ? "reserved" : "running",
        reserved ? lease.admittedAtMs + reservationTtlMs : Number.POSITIVE_INFINITY,
      );
    }
    this.#lastRecoveryMs = this.#config.clock.now();
  }
}

function failureOf(e: SubstrateError): Failure {
  return { reason: e.reason, message: e.tenantMessage };
}

function syntheticLease(req: ProvisionRequest, instances: LeaseRecord["instances"]): LeaseRecord {
  return {
    leaseUuid: req.leaseUuid,
    tenant: req.tenant,
    providerUuid: req.providerUuid,
    operationId: req.operationId,
    callbackUrl: req.callbackUrl,
    lifecycleUrl: req.lifecycleUrl,
    items: req.items,
    instances,
    payload: req.payload,
    payloadHash: req.payloadHash,
    image: "",
    release: 1,
    head: "operation",
    phase: "before_effects",
    status: "provisioning",
    failCount: 0,
    reason: undefined,
    message: undefined,
    createdAtMs: 0,
    admittedAtMs: 0,
    generation: 0,
    streak: NO_STREAK,
  };
}
