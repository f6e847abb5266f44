import { EventEmitter } from "node:events";
import { Counter, type Registry } from "prom-client";
import type { ChainPort, LeaseStateName } from "../../chain/port.ts";
import { type KeyedMutex, withDeadline } from "../../core/async/index.ts";
import { buildCallbackUrl } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { classifyState } from "../../core/reconcile/index.ts";
import { newUuidV4 } from "../../core/uuid.ts";
import { failpoint } from "../../failpoints.ts";
import type { Logger } from "../../log.ts";
import type { BackendClient, MutationOutcome } from "../backend-client/index.ts";
import { EVERY_LEGACY_TENANT, type ProviderConfig } from "../config/index.ts";
import { type BackendFleet, onLostBackend, type PayloadRecords, type Placements } from "../store/index.ts";
import { ANSWERS, type Command, promote } from "./completion.ts";
import {
  type CommandKind,
  DEFAULT_LIMITS,
  formatAdmittedAt,
  type Limits,
  MaintenanceJournal,
  type StoredAnswer,
  sameCommand,
} from "./journal.ts";
import { backendRefusalAnswer, MaintenanceRefused, type Refusal } from "./refusal.ts";

/**
 * Restart and update, from the tenant's request to the backend's 202: every step of one
 * lease runs in the lease's serial queue (the lifecycle's), so a command never interleaves
 * with a provision, a close or a callback of that lease. A command is journaled (and
 * fsynced) before the backend hears of it, and is resent unchanged — same maintenance_id,
 * same admitted_at — by an exact retry or the recovery pass until the backend answers.
 */
export interface MaintenanceOptions {
  config: ProviderConfig;
  store: Placements;
  /** The pinned backends (storage identities, lost backends, baselines). */
  fleet: BackendFleet;
  payloads: PayloadRecords | undefined;
  clients: ReadonlyMap<string, BackendClient>;
  chain: ChainPort;
  queue: KeyedMutex;
  clock: Clock;
  logger: Logger;
  registry?: Registry;
  limits?: Limits;
  /** Bound on the recovery pass's chain read of one lease (default 10 s). */
  readDeadlineMs?: number;
}

export interface CommandRequest {
  leaseUuid: string;
  tenant: string;
  leaseState: LeaseStateName;
  kind: CommandKind;
  payload: Buffer | undefined;
  /** The Idempotency-Key, or (legacy tenants) the replay key of the spent token. */
  key: { idempotencyKey: string } | { tokenKey: string };
}

export interface Accepted {
  status: 202;
  body: { status: string };
}

/** `progress`: a command the backend accepted; the tenant API streams the lease's new status. */
export interface MaintenanceEvents {
  progress: [leaseUuid: string, status: string];
}

export class Maintenance extends EventEmitter<MaintenanceEvents> {
  readonly #options: MaintenanceOptions;
  readonly journal: MaintenanceJournal;
  readonly #legacy: Counter;
  /** The listed tenants, or "every" for `["*"]`. */
  readonly #legacyTenants: ReadonlySet<string> | "every";

  constructor(o: MaintenanceOptions) {
    super();
    this.#options = o;
    this.journal = MaintenanceJournal.of(o.store);
    const listed = o.config.maintenanceLegacyIdempotencyTenants;
    this.#legacyTenants = listed.includes(EVERY_LEGACY_TENANT) ? "every" : new Set(listed);
    this.#legacy = new Counter({
      name: "fred_api_maintenance_legacy_key_total",
      help: "Restart/update requests of legacy tenants keyed by their token (no Idempotency-Key)",
      registers: o.registry === undefined ? [] : [o.registry],
    });
  }

  /** Whether the tenant may omit Idempotency-Key (maintenance_legacy_idempotency_tenants; "*" is everyone). */
  isLegacyTenant(tenant: string): boolean {
    return this.#legacyTenants === "every" || this.#legacyTenants.has(tenant);
  }

  /** A legacy tenant's command keyed by its token: counted and logged, as the operator asked. */
  legacyKeyUsed(tenant: string, leaseUuid: string): void {
    this.#legacy.inc();
    this.#options.logger.warn(
      { tenant, lease_uuid: leaseUuid },
      "restart/update without Idempotency-Key (legacy tenant)",
    );
  }

  /** "restarting"/"updating" while the lease has an unsettled command: status reads report it. */
  inProgress(leaseUuid: string): string | undefined {
    const kind = this.journal.pendingKind(leaseUuid);
    return kind === undefined ? undefined : progressStatus(kind);
  }

  /**
   * Changes whenever the lease's newest command is admitted or moves on ("" with none). A
   * backend read cached under one revision says nothing of the lease under the next: the
   * "ready" read just before an update is not the lease after the update failed.
   */
  revision(leaseUuid: string): string {
    const n = this.journal.newest(leaseUuid);
    return n === undefined ? "" : `${n.maintenanceId} ${n.phase}`;
  }

  /** Admits (or replays) one command; a refusal is thrown as `MaintenanceRefused`. */
  command(r: CommandRequest, signal: AbortSignal): Promise<Accepted> {
    return this.#options.queue.run(r.leaseUuid, () => this.#command(r, signal));
  }

  async #command(r: CommandRequest, signal: AbortSignal): Promise<Accepted> {
    const { store, clients, payloads } = this.#options;
    const key = "idempotencyKey" in r.key ? r.key.idempotencyKey : `token:${r.key.tokenKey}`;
    // The backend's storage is gone for good (retired --lost): nothing can run there, and a
    // stored answer would describe workloads that no longer exist. The lease is being ended.
    if (onLostBackend(this.#options, r.leaseUuid)) throw refuse("storage-lost");
    const existing = this.journal.byKey(r.leaseUuid, key);
    if (existing !== undefined) {
      if (!sameCommand(existing, r.kind, r.payload)) throw refuse("key-reused");
      return this.#replay(existing, signal);
    }
    if (r.leaseState !== "LEASE_STATE_ACTIVE") throw refuse("not-active");
    if (r.kind === "update" && payloads === undefined) throw refuse("unavailable");
    const placement = store.placement(r.leaseUuid);
    const owner = placement?.state === "confirmed" ? placement.owner : undefined;
    const client = owner === undefined ? undefined : clients.get(owner);
    if (
      owner === undefined ||
      placement?.lifecycleId === undefined ||
      client === undefined ||
      client.backend.fenced
    ) {
      throw refuse("unavailable");
    }
    // A provision in progress always has its attempt recorded (written ahead of the request).
    if (store.hasAttempt(r.leaseUuid)) throw new MaintenanceRefused({ kind: "busy", command: r.kind });
    let admitted: ReturnType<MaintenanceJournal["admit"]>;
    try {
      admitted = this.journal.admit(
        {
          leaseUuid: r.leaseUuid,
          key,
          maintenanceId: "idempotencyKey" in r.key ? r.key.idempotencyKey : newUuidV4(),
          tenant: r.tenant,
          kind: r.kind,
          payload: r.payload,
          backend: owner,
          lifecycleId: placement.lifecycleId,
          nowMs: this.#options.clock.now(),
        },
        this.#options.limits ?? DEFAULT_LIMITS,
      );
      await this.journal.durable();
    } catch (err) {
      throw refuse("unavailable", err);
    }
    switch (admitted.kind) {
      case "busy":
        throw new MaintenanceRefused({ kind: "busy", command: r.kind });
      case "reserved":
        throw refuse("reserved");
      case "full":
        throw refuse("full");
      case "existing":
        return this.#replay(admitted.command, signal);
      case "admitted":
        failpoint("maintenance.after-admit");
        this.#options.logger.info(
          { lease_uuid: r.leaseUuid, maintenance_id: admitted.command.maintenanceId, kind: r.kind },
          "maintenance command admitted",
        );
        return this.#dispatch(admitted.command, signal);
    }
  }

  /** An exact retry: the stored answer, the 202 of accepted work, or another delivery try. */
  #replay(c: Command, signal: AbortSignal): Promise<Accepted> {
    if (c.phase === "admitted") return this.#dispatch(c, signal);
    const answer = c.phase === "settled" ? c.answer : ANSWERS.accepted;
    if (answer === undefined || answer.status !== 202) throw answered(answer ?? ANSWERS.ended);
    return Promise.resolve(accepted(c.kind));
  }

  /** Sends the journaled command to the lease's backend and records what the answer proves. */
  async #dispatch(c: Command, signal: AbortSignal): Promise<Accepted> {
    const { clients, config, logger } = this.#options;
    const log = logger.child({
      lease_uuid: c.leaseUuid,
      backend: c.backend,
      maintenance_id: c.maintenanceId,
    });
    const client = clients.get(c.backend);
    if (client === undefined || client.backend.fenced) throw refuse("pending");
    const command = {
      leaseUuid: c.leaseUuid,
      maintenanceId: c.maintenanceId,
      callbackUrl: buildCallbackUrl(config.callbackBase, "lifecycle_id", c.lifecycleId),
      admittedAt: formatAdmittedAt(c.admittedAtUs),
    };
    let out: MutationOutcome;
    if (c.kind === "restart") out = await client.restart(command, signal);
    else if (c.payload !== undefined) out = await client.update({ ...command, payload: c.payload }, signal);
    else throw refuse("pending", new FredError("ERR_INVALID_ARGUMENT", "update without its manifest"));
    if (out.kind === "accepted") {
      try {
        this.journal.accepted(c.leaseUuid, c.maintenanceId);
        await this.journal.durable();
      } catch (err) {
        throw refuse("unrecorded", err);
      }
      log.info("maintenance command accepted by the backend");
      this.emit("progress", c.leaseUuid, progressStatus(c.kind));
      return accepted(c.kind);
    }
    if (out.kind === "refused" && out.status === 503) {
      // Capacity is transient and refused before any effect: the command stays admitted
      // (not a settled answer), so the exact retry or the recovery pass can still run it.
      log.warn("maintenance command refused by the backend for capacity; pending");
      throw refuse("backend-capacity");
    }
    if (out.kind === "refused") {
      const { outcome, answer } = backendRefusalAnswer(out, c.kind);
      try {
        this.journal.settle(c.leaseUuid, c.maintenanceId, outcome, answer, this.#options.clock.now());
        await this.journal.durable();
      } catch (err) {
        throw refuse("unrecorded", err);
      }
      log.info({ status: out.status, outcome }, "maintenance command refused by the backend; settled");
      throw answered(answer);
    }
    log.warn(
      { outcome: out.kind, reason: out.reason, detail: out.detail },
      "maintenance command not delivered; pending",
    );
    throw refuse("pending");
  }

  /**
   * The recovery pass (startup and every reconciler sweep): a confirmed update gets its
   * payload written; a command of a lease that ended on chain (exact read) is settled
   * without running; an admitted one of an ACTIVE lease is resent. Receipts of leases whose
   * placement is gone are reclaimed.
   */
  async recover(signal: AbortSignal): Promise<void> {
    for (const c of this.journal.unsettled()) {
      if (signal.aborted) return;
      await this.#options.queue
        .run(c.leaseUuid, () => this.#recoverOne(c, signal))
        .catch((err: unknown) => {
          if (!signal.aborted)
            this.#options.logger.debug(
              { err, lease_uuid: c.leaseUuid },
              "maintenance recovery: still pending",
            );
        });
    }
    const { store } = this.#options;
    for (const lease of this.journal.leases()) {
      if (store.placement(lease) === undefined && store.attemptFor(lease) === undefined)
        this.journal.forget(lease);
    }
  }

  async #recoverOne(c: Command, signal: AbortSignal): Promise<void> {
    const current = this.journal.byMaintenanceId(c.leaseUuid, c.maintenanceId);
    if (current === undefined || current.phase === "settled") return;
    if (current.phase === "confirmed") {
      await promote(this.#options, current);
      return;
    }
    const { chain, clock } = this.#options;
    const lease = await withDeadline(
      clock,
      this.#options.readDeadlineMs ?? 10_000,
      signal,
      () => new FredError("ERR_CHAIN_READ_TIMEOUT", "maintenance recovery: chain read timed out"),
      (s) => chain.getLease(c.leaseUuid, s),
    );
    if (lease !== undefined && classifyState(lease.state) === "terminal") {
      this.journal.settle(c.leaseUuid, c.maintenanceId, "ended", ANSWERS.ended, clock.now());
      await this.journal.durable();
      this.#options.logger.info(
        { lease_uuid: c.leaseUuid, maintenance_id: c.maintenanceId },
        "lease ended on chain; its pending maintenance command settled without running",
      );
      return;
    }
    if (current.phase === "admitted" && lease?.state === "LEASE_STATE_ACTIVE")
      await this.#dispatch(current, signal);
  }
}

function accepted(kind: CommandKind): Accepted {
  return { status: 202, body: { status: progressStatus(kind) } };
}

/** "restarting"/"updating": the lease's status while its command runs. */
export const progressStatus = (kind: CommandKind) => (kind === "restart" ? "restarting" : "updating");

function refuse(kind: Exclude<Refusal["kind"], "busy" | "answered">, cause?: unknown): MaintenanceRefused {
  return new MaintenanceRefused({ kind }, cause);
}

function answered(answer: StoredAnswer): MaintenanceRefused {
  return new MaintenanceRefused({ kind: "answered", answer });
}
