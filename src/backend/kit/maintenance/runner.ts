import type { KeyedMutex } from "../../../core/async/index.ts";
import type { MaintenanceRequest } from "../../../core/backend-contract/index.ts";
import { keepStoredCredentials } from "../../../core/manifest/index.ts";
import type { Logger } from "../../../log.ts";
import { type AdmissionConfig, prepare, withPinnedImages, workloadSpec } from "../admission.ts";
import { boundDiagnosticLogs, FAILED_LOG_PREFIX } from "../diagnostics.ts";
import { badRequest, conflict, notFound, unsupported } from "../errors.ts";
import type { LeaseRecord } from "../journal/journal.ts";
import { type Substrate, SubstrateError, substrateOutcomeOf, type WorkloadSpec } from "../substrate.ts";
import { commandDigest, type MaintenanceRecord } from "./store.ts";

/**
 * Restart and update on the kit: admission (everything decided before the 202), the
 * worker that calls the substrate under the lease's gate, and the resumption of commands
 * a crash left pending. The lease's single mutation head is the command while it runs, so
 * it never interleaves with a provision, close or restore of that lease, and the engine's
 * per-lease gate (the same one those run under) serialises the substrate calls.
 */
export interface MaintenanceDeps {
  config: AdmissionConfig & { substrate: Substrate; logger: Logger; wakeOutbox(lease: string): void };
  gate: KeyedMutex;
  /** The engine's in-flight workers by lease: a close aborts ours the same way. */
  live: Map<string, AbortController>;
  shutdown: AbortSignal;
  settled(lease: string): void;
}

export type MaintenanceAnswer = { status: "restarting" | "updating" };

const REASON = { restart: "RestartFailed", update: "UpdateFailed" } as const;

export class MaintenanceRunner {
  readonly #deps: MaintenanceDeps;

  constructor(deps: MaintenanceDeps) {
    this.#deps = deps;
  }

  /** Admits a command (durably, before answering) and starts its worker; or replays it. */
  async command(req: MaintenanceRequest): Promise<MaintenanceAnswer> {
    const { journal, substrate } = this.#deps.config;
    if (substrate[req.kind] === undefined) throw unsupported(req.kind);
    const answer: MaintenanceAnswer = { status: req.kind === "restart" ? "restarting" : "updating" };
    let lease = this.#probe(req);
    if (lease === undefined) {
      await journal.durable(); // the replayed command may still be in the open group commit
      return answer;
    }
    let image = lease.image;
    if (req.kind === "update" && req.payload !== undefined) {
      // A tenant may send back the masked password `/releases` shows: it keeps the one held here.
      req = { ...req, payload: Buffer.from(keepStoredCredentials(req.payload, lease.payload)) };
    }
    if (req.kind === "update") {
      image = await this.#validateUpdate(lease, req);
      lease = this.#probe(req); // the validation awaited: look again
      if (lease === undefined) {
        await journal.durable();
        return answer;
      }
    }
    const admitted = journal.maintenance.admit({
      req,
      generation: lease.generation,
      operationId: lease.operationId,
      sourceRelease: lease.release,
      image,
      nowMs: this.#deps.config.clock.now(),
    });
    if (admitted === undefined) throw conflict("lease changed while the command was admitted; retry");
    // The 202 promises a durable command: wait for the group commit before answering.
    await journal.durable();
    this.#dispatch(req.leaseUuid);
    return answer;
  }

  /**
   * The synchronous checks, in order. Undefined: an exact replay of a known command
   * (answered as first time, no new work). Else the lease the command may run on.
   */
  #probe(req: MaintenanceRequest): LeaseRecord | undefined {
    const { journal } = this.#deps.config;
    const lease = journal.getLease(req.leaseUuid);
    if (lease === undefined) throw notFound();
    const known = journal.maintenance.get(req.maintenanceId);
    if (known !== undefined) {
      if (known.leaseUuid !== req.leaseUuid)
        throw conflict("maintenance_id is already used by another lease");
      if (known.digest !== commandDigest(req)) {
        throw conflict("maintenance_id was admitted with a different command; the admitted one stands");
      }
      return undefined;
    }
    const highWater = journal.maintenance.highWater(req.leaseUuid);
    if (req.admittedKey !== undefined && highWater !== undefined && req.admittedKey <= highWater) {
      throw conflict(
        "command is not newer than the lease's newest restart or update and has no receipt; it was not run",
        "maintenance_expired",
      );
    }
    if (lease.head !== "none") throw conflict(`lease is ${lease.status}; try again once that settles`);
    if (journal.maintenance.completionQueued(req.leaseUuid)) {
      throw conflict("the previous restart or update's completion is still being delivered");
    }
    if (lease.status !== "ready")
      throw conflict(`lease is ${lease.status}; only a ready lease can ${req.kind}`);
    if (req.callbackUrl !== lease.lifecycleUrl && req.callbackUrl !== lease.callbackUrl) {
      throw conflict("callback_url does not name the lease's current lifecycle");
    }
    return lease;
  }

  /** An update's manifest passes what a provision's would (returns its image). */
  async #validateUpdate(lease: LeaseRecord, req: MaintenanceRequest): Promise<string> {
    const { config } = this.#deps;
    const prepared = prepare(config, {
      leaseUuid: lease.leaseUuid,
      tenant: lease.tenant,
      providerUuid: lease.providerUuid,
      operationId: lease.operationId,
      callbackUrl: lease.callbackUrl,
      lifecycleUrl: lease.lifecycleUrl,
      items: lease.items,
      payload: req.payload,
      payloadHash: req.payloadHash,
    });
    if (config.substrate.validate) {
      const next = { ...this.#spec(lease), payload: req.payload, manifest: prepared.manifest };
      try {
        await config.substrate.validate(next, this.#deps.shutdown);
      } catch (err) {
        if (err instanceof SubstrateError && err.validationCode !== undefined) {
          throw badRequest(err.tenantMessage, err.validationCode);
        }
        throw err;
      }
    }
    return prepared.image;
  }

  /** Resumes every journaled command without a worker (startup and each recovery pass). */
  resume(): void {
    for (const lease of this.#deps.config.journal.leasesWithHead("maintenance")) {
      if (this.#deps.shutdown.aborted) return;
      if (!this.#deps.live.has(lease.leaseUuid)) this.#dispatch(lease.leaseUuid);
    }
  }

  #dispatch(leaseUuid: string): void {
    const controller = new AbortController();
    const { live, gate, config } = this.#deps;
    live.set(leaseUuid, controller);
    void gate
      .run(leaseUuid, () => this.#run(leaseUuid, controller.signal))
      .catch((err) => config.logger.error({ err, lease_uuid: leaseUuid }, "maintenance worker crashed"))
      .finally(() => {
        if (live.get(leaseUuid) === controller) live.delete(leaseUuid);
      });
  }

  async #run(leaseUuid: string, signal: AbortSignal): Promise<void> {
    const { journal, clock, pool, logger } = this.#deps.config;
    const lease = journal.getLease(leaseUuid);
    const cmd = journal.maintenance.pending(leaseUuid);
    if (lease?.head !== "maintenance" || cmd === undefined) return;
    const log = logger.child({ lease_uuid: leaseUuid, maintenance_id: cmd.maintenanceId, kind: cmd.kind });
    // "started" is durable before the first effect; a resumed command calls the substrate again.
    if (cmd.phase === "pending" && journal.maintenance.markStarted(cmd.maintenanceId))
      await journal.durable();
    try {
      await this.#execute(cmd, lease, signal);
      if (journal.maintenance.settleSuccess(cmd, clock.now())) {
        log.info("maintenance done");
        this.#deps.settled(leaseUuid);
      }
    } catch (err) {
      if (substrateOutcomeOf(err) !== "definite" || signal.aborted) {
        // Effects unknown: the command stays pending; recovery calls the substrate again.
        log.warn({ err }, "maintenance outcome ambiguous; left for recovery");
        return;
      }
      const e = err as SubstrateError;
      log.warn({ err: e, reason: e.reason }, "maintenance failed");
      // Only "UpdateFailed" says the current release was restored (the substrate contract);
      // any other definite failure of an update left the lease without a running release.
      const rolledBack = cmd.kind === "update" && e.reason === REASON.update;
      const message =
        cmd.kind === "update" && !rolledBack
          ? `the update failed and the previous release could not be restored: ${e.tenantMessage}`
          : e.tenantMessage;
      const failure = { reason: REASON[cmd.kind], message };
      const logs = rolledBack && e.logs !== undefined ? failedAttemptLogs(e.logs) : undefined;
      if (journal.maintenance.settleFailure(cmd, failure, clock.now(), rolledBack, logs)) {
        if (!rolledBack) pool.release(leaseUuid); // a failed lease holds no capacity
        this.#deps.settled(leaseUuid);
      }
    }
  }

  async #execute(cmd: MaintenanceRecord, lease: LeaseRecord, signal: AbortSignal): Promise<void> {
    const { substrate, parseManifest } = this.#deps.config;
    const current = this.#spec(lease);
    if (cmd.kind === "restart") {
      if (substrate.restart === undefined) throw gone(cmd);
      return substrate.restart(current, signal);
    }
    if (substrate.update === undefined) throw gone(cmd);
    const { journal } = this.#deps.config;
    const unpinned = workloadSpec(
      { ...lease, release: cmd.targetRelease, payload: cmd.payload, payloadHash: cmd.payloadHash },
      this.#deps.config.backendName,
      journal.storageId,
      parseManifest,
      journal.pinnedImages(lease.leaseUuid, cmd.targetRelease),
    );
    let next: WorkloadSpec;
    try {
      // Every update resolves the manifest's references again: the same moved tag is new content.
      next = await withPinnedImages(journal, substrate, unpinned, signal, false);
    } catch (err) {
      // Nothing was touched: the current release still runs, as after a rolled-back update.
      if (substrateOutcomeOf(err) !== "definite") throw err;
      const e = err as SubstrateError;
      throw new SubstrateError("definite", REASON.update, e.tenantMessage, { cause: e });
    }
    return substrate.update(current, next, signal);
  }

  /** The lease's current release, with the images it was pinned to. */
  #spec(lease: LeaseRecord): WorkloadSpec {
    const { backendName, journal, parseManifest } = this.#deps.config;
    return workloadSpec(
      lease,
      backendName,
      journal.storageId,
      parseManifest,
      journal.pinnedImages(lease.leaseUuid, lease.release),
    );
  }
}

/** A rolled-back attempt's logs, bounded like any failure's, under `failed/` keys. */
function failedAttemptLogs(logs: Readonly<Record<string, string>>): Record<string, string> {
  const bounded = boundDiagnosticLogs(logs);
  return Object.fromEntries(Object.entries(bounded).map(([k, v]) => [`${FAILED_LOG_PREFIX}${k}`, v]));
}

/** A command journaled by a build whose substrate had the operation, resumed by one without. */
function gone(cmd: MaintenanceRecord): SubstrateError {
  return new SubstrateError("definite", REASON[cmd.kind], `this backend no longer supports ${cmd.kind}`);
}
