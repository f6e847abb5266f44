import type { Clock } from "../../../core/clock.ts";
import type { Logger } from "../../../log.ts";
import type { AdmissionConfig } from "../admission.ts";
import type { Failure, Journal, LeaseRecord } from "../journal/journal.ts";
import type { RetentionObserver } from "../ops-metrics.ts";
import { PeriodicPass } from "../periodic-pass.ts";
import type { ResourcePool } from "../resources.ts";
import type { ParsedManifest, Substrate, WorkloadSpec } from "../substrate.ts";
import { retentionCrashPoint, retentionCrashPointAfterCommit } from "./crash-points.ts";
import { decideRetention, extractPartition, type RetentionPolicy } from "./policy.ts";
import { type RetentionRow, RetentionStore } from "./store.ts";

/**
 * Retention around the engine's workflows: the close that keeps a lease's data, the
 * restore worker's adoption step and its settlement, and the periodic sweep (expiry,
 * destruction of reaping rows, orphan pruning). The engine calls in at a few fixed points
 * (see engine.ts); everything here runs under the engine's per-lease gate or, for the
 * sweep, one pass at a time. The rows are the authority; the substrate only moves data.
 */
export interface RetentionOptions {
  journal: Journal;
  pool: ResourcePool;
  substrate: Substrate;
  clock: Clock;
  logger: Logger;
  policy: RetentionPolicy;
  parseManifest: AdmissionConfig["parseManifest"];
  /** Sweep outcomes and the bytes expired data freed (ops-metrics.ts). */
  observe?: RetentionObserver;
}

/** What a close's teardown did, and the row change that commits with the close. */
export interface Teardown {
  retained: boolean;
  /** Runs inside the close's completing transaction. */
  commit(): void;
}

const RESTORE_FAILED = "RestoreFailed";

export class Retention {
  readonly store: RetentionStore;
  readonly policy: RetentionPolicy;
  readonly #options: RetentionOptions;
  readonly #log: Logger;
  readonly #listeners = new Set<(e: "retention:swept") => void>();
  readonly #pass: PeriodicPass;
  /** Failed restore destinations whose copy this process discarded (each sweep need not again). */
  readonly #copiesDiscarded = new Set<string>();

  constructor(o: RetentionOptions) {
    this.#options = o;
    this.policy = o.policy;
    this.store = new RetentionStore(o.journal);
    this.#log = o.logger.child({ component: "retention" });
    // The next pass is scheduled an interval after one ends (passes never overlap), before
    // "retention:swept" is emitted.
    this.#pass = new PeriodicPass({
      clock: o.clock,
      intervalMs: () => this.policy.reapIntervalMs,
      run: async (signal) => {
        try {
          await this.#sweepOnce(signal);
          o.observe?.sweep("success");
        } catch (err) {
          o.observe?.sweep("failed");
          throw err;
        }
      },
      onError: (err) => this.#log.error({ err }, "retention sweep failed"),
      afterRun: () => {
        for (const l of this.#listeners) l("retention:swept");
      },
    });
    o.journal.onOperationSettled = (lease, outcome) => this.#onSettled(lease, outcome);
  }

  /** The substrate can keep and adopt data (else a close destroys and a restore is a bare 422). */
  get capable(): boolean {
    const s = this.#options.substrate;
    return s.retain !== undefined && s.destroyRetained !== undefined && s.adoptRetained !== undefined;
  }

  on(listener: (e: "retention:swept") => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  // ---- close ----

  /**
   * Inside the transaction that begins a close: records the decision to retain as a
   * `closing` row, so a restart finishes the close the same way whatever the config says
   * then. A failed restore destination never retains: its volumes copy data the source
   * row holds again.
   */
  onCloseBegun(lease: LeaseRecord): void {
    if (!this.policy.retainOnClose || !this.capable) return;
    const { store } = this;
    if (store.get(lease.leaseUuid) !== undefined || store.isDiscarded(lease.leaseUuid)) return;
    const { partition, collapsed } = extractPartition(this.policy.partitionSource, this.#manifest(lease));
    if (collapsed !== undefined)
      this.#log.info({ lease_uuid: lease.leaseUuid, reason: collapsed }, "retention partition collapsed");
    store.insertClosing(lease, partition, this.#options.clock.now());
  }

  /** The physical part of a close: retain (then decide against the caps) or destroy. */
  async teardown(lease: LeaseRecord, signal: AbortSignal): Promise<Teardown> {
    const { substrate } = this.#options;
    const row = this.store.get(lease.leaseUuid);
    const retain = substrate.retain;
    const destroyRetained = substrate.destroyRetained;
    if (row === undefined || retain === undefined || destroyRetained === undefined) {
      await substrate.destroyLease(lease.leaseUuid, signal);
      return { retained: false, commit: () => this.store.clearDiscard(lease.leaseUuid) };
    }
    if (row.status === "closing") {
      await substrate.removeWorkload(lease.leaseUuid, signal);
      retentionCrashPoint("retention.close.after-remove");
      const set = await retain.call(substrate, lease.leaseUuid, lease.instances, signal);
      const mb = Math.ceil(set.volumes.reduce((n, v) => n + v.bytes, 0) / (1024 * 1024));
      const decision = decideRetention(this.policy, this.#held(), {
        leaseUuid: row.leaseUuid,
        tenant: row.tenant,
        partition: row.partition,
        mb,
      });
      if (decision.retain) {
        return {
          retained: true,
          commit: () => {
            if (
              !this.store.activate(
                row,
                decision.partition,
                set.volumes,
                set.fsIdentity,
                this.#options.clock.now(),
              )
            )
              throw new Error(`retention row of ${row.leaseUuid} moved during its close`);
            for (const old of decision.evict) {
              if (this.store.reap(old, "evicted"))
                this.#log.info(
                  { lease_uuid: old.leaseUuid, for_lease: row.leaseUuid },
                  "evicted retained lease",
                );
            }
            this.#refreshPool();
            retentionCrashPointAfterCommit("retention.close.after-commit");
          },
        };
      }
      this.#log.info({ lease_uuid: row.leaseUuid, cap: decision.why, mb }, "retention refused by a cap");
      // Durable before anything is destroyed, so a restart destroys too rather than retaining nothing.
      this.store.tx(() => this.store.reap(row, "refused"));
      await this.#options.journal.durable();
    }
    // Refused (now or before a crash): whatever copies exist go, then the lease's remains.
    const left = await retain.call(substrate, lease.leaseUuid, lease.instances, signal);
    await destroyRetained.call(
      substrate,
      lease.leaseUuid,
      left.volumes.map((v) => v.name),
      signal,
    );
    await substrate.destroyLease(lease.leaseUuid, signal);
    return {
      retained: false,
      commit: () => {
        const now = this.store.get(lease.leaseUuid);
        if (now !== undefined) this.store.remove(now);
      },
    };
  }

  // ---- restore worker ----

  /** Before a restore destination's workload is created: adopt the source's retained data. */
  async beforeCreate(lease: LeaseRecord, spec: WorkloadSpec, signal: AbortSignal): Promise<void> {
    const source = this.store.restoringInto(lease.leaseUuid);
    if (source === undefined || source.destOperation !== lease.operationId) return;
    await this.#options.substrate.adoptRetained?.(source.leaseUuid, source.volumes, spec, signal);
    retentionCrashPoint("retention.restore.after-adopt");
  }

  /**
   * A restore destination failed definitely: its adopted copy goes first (the data is
   * handed back to the source row in the settling transaction), and the failure carries
   * `RestoreFailed`. Undefined for any other lease.
   */
  async restoreFailure(
    lease: LeaseRecord,
    failure: Failure,
    signal: AbortSignal,
  ): Promise<Failure | undefined> {
    if (this.store.restoringInto(lease.leaseUuid) === undefined) return undefined;
    await this.#discardCopy(lease.leaseUuid, signal);
    return { reason: RESTORE_FAILED, message: `restore failed: ${failure.message}` };
  }

  async #discardCopy(leaseUuid: string, signal: AbortSignal): Promise<boolean> {
    try {
      await this.#options.substrate.destroyLease(leaseUuid, signal);
      return true;
    } catch (err) {
      this.#log.warn(
        { lease_uuid: leaseUuid, err },
        "discarding a failed restore's copy failed; the sweep retries",
      );
      return false;
    }
  }

  /** Inside every operation-settling transaction (journal hook). */
  #onSettled(leaseUuid: string, outcome: "success" | "failed"): void {
    const source = this.store.restoringInto(leaseUuid);
    if (source === undefined) return;
    // Committed: the destination owns the data; the retained copy is destroyed by the sweep.
    if (outcome === "success") {
      this.store.reap(source, "restored");
      retentionCrashPointAfterCommit("retention.restore.after-consume");
    } else this.store.handBack(source);
    this.#refreshPool();
  }

  // ---- the sweep ----

  /** Sets the pool's retained disk, runs a first sweep, then one every `retention_reap_interval`. */
  start(): void {
    this.#refreshPool();
    this.#pass.start();
  }

  stop(): Promise<void> {
    return this.#pass.stop();
  }

  /** One pass; concurrent callers share it. */
  sweep(): Promise<void> {
    return this.#pass.run();
  }

  async #sweepOnce(signal: AbortSignal): Promise<void> {
    const { store, policy } = this;
    const { journal, clock } = this.#options;
    if (policy.maxAgeMs > 0) {
      const now = clock.now();
      let marked = false;
      for (const row of store.withStatus("active")) {
        if ((row.retainedAtMs ?? row.closedAtMs) + policy.maxAgeMs > now) continue;
        if (store.tx(() => store.reap(row, "expired"))) {
          marked = true;
          this.#log.info({ lease_uuid: row.leaseUuid }, "retained data expired");
        }
      }
      await journal.durable();
      if (marked) retentionCrashPoint("retention.reap.after-mark");
    }
    for (const row of store.withStatus("reaping")) {
      if (signal.aborted) return;
      if (journal.getLease(row.leaseUuid) !== undefined) continue; // a refused close still running
      try {
        await this.#options.substrate.destroyRetained?.(
          row.leaseUuid,
          row.volumes.map((v) => v.name),
          signal,
        );
      } catch (err) {
        this.#log.warn(
          { lease_uuid: row.leaseUuid, err },
          "destroying retained data failed; next sweep retries",
        );
        continue;
      }
      retentionCrashPoint("retention.reap.after-delete");
      if (store.tx(() => store.remove(row)) && (row.reapReason === "expired" || row.reapReason === "evicted"))
        this.#options.observe?.freed(row.volumes.reduce((n, v) => n + v.bytes, 0));
    }
    await this.#discardFailedCopies(signal);
    await this.#pruneOrphans(signal);
    this.#refreshPool();
  }

  /**
   * Copies adopted by restores that then failed, whose inline discard did not finish. The
   * mark stays while the destination's record does: it is what keeps that lease's close
   * (the provider closes a rejected destination later) from retaining (onCloseBegun), and
   * that close clears it.
   */
  async #discardFailedCopies(signal: AbortSignal): Promise<void> {
    const { journal } = this.#options;
    const rows = this.store.withStatus("active");
    const marked = new Set(rows.map((r) => r.discardLease));
    for (const dest of this.#copiesDiscarded) if (!marked.has(dest)) this.#copiesDiscarded.delete(dest);
    for (const row of rows) {
      const dest = row.discardLease;
      if (dest === undefined || signal.aborted) continue;
      const lease = journal.getLease(dest);
      if (lease === undefined) {
        // Gone without a close of ours (a crash between): nothing of it may be left.
        if (await this.#discardCopy(dest, signal)) this.store.tx(() => this.store.clearDiscard(dest));
        continue;
      }
      // A destination that lives on (re-provisioned, closing) owns what it has now.
      const idle = lease.head === "none" && lease.status === "failed";
      if (idle && !this.#copiesDiscarded.has(dest) && (await this.#discardCopy(dest, signal)))
        this.#copiesDiscarded.add(dest);
    }
  }

  /**
   * Active rows whose every volume is missing from a complete inventory of the same root,
   * on `retention_orphan_confirmations` consecutive sweeps, are deleted. A root of another
   * identity (unmounted, replaced) proves nothing and is skipped.
   */
  async #pruneOrphans(signal: AbortSignal): Promise<void> {
    const inventory = this.#options.substrate.retainedInventory;
    if (inventory === undefined || this.policy.orphanConfirmations <= 0) return;
    let inv: Awaited<ReturnType<typeof inventory>>;
    try {
      inv = await inventory.call(this.#options.substrate, signal);
    } catch (err) {
      this.#log.warn({ err }, "retained inventory unavailable; orphan pruning skipped");
      return;
    }
    const { store } = this;
    for (const row of store.withStatus("active")) {
      if (row.volumes.length === 0) continue;
      if (row.fsIdentity !== inv.fsIdentity) {
        this.#log.warn(
          { lease_uuid: row.leaseUuid },
          "volume root identity differs from the recorded one; not pruning",
        );
        continue;
      }
      const missing = row.volumes.every((v) => !inv.names.has(v.name));
      if (!missing) {
        if (row.orphanMisses > 0) store.tx(() => store.resetMisses(row));
        continue;
      }
      const misses = store.tx(() => store.missed(row));
      if (misses === undefined || misses < this.policy.orphanConfirmations) continue;
      const fresh = store.get(row.leaseUuid);
      if (fresh !== undefined && store.tx(() => store.remove(fresh)))
        this.#log.warn(
          { lease_uuid: row.leaseUuid, misses },
          "pruned a retention row whose volumes are gone",
        );
    }
  }

  // ---- accounting ----

  /** Rows whose data is restorable now (what caps count). */
  #held(): RetentionRow[] {
    return this.store.all().filter((r) => r.status === "active" || r.status === "restoring");
  }

  /**
   * Retained disk the pool subtracts from free disk: active rows, and rows being reaped for
   * expiry or eviction (their bytes are still there). A restoring source is held by its
   * destination's reservation instead; a committed restore's copy shares its extents.
   */
  retainedDiskMb(except?: string): number {
    let mb = 0;
    for (const r of this.store.all()) {
      if (r.leaseUuid === except) continue;
      const counted =
        r.status === "active" ||
        (r.status === "reaping" && (r.reapReason === "expired" || r.reapReason === "evicted"));
      if (counted) mb += r.retainedMb;
    }
    return mb;
  }

  #refreshPool(): void {
    this.#options.pool.setRetainedDisk(this.retainedDiskMb());
  }

  #manifest(lease: LeaseRecord): ParsedManifest | undefined {
    if (lease.payload === undefined || this.#options.parseManifest === undefined) return undefined;
    try {
      return this.#options.parseManifest(lease.payload);
    } catch {
      return undefined;
    }
  }
}
