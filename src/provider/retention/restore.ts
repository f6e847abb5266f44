import type { ChainLease } from "../../chain/port.ts";
import { leaseEnded } from "../../core/lease-rules.ts";
import { newUuidV4 } from "../../core/uuid.ts";
import type { MutationOutcome } from "../backend-client/index.ts";
import { type LifecycleDeps, leaseRequest } from "../lifecycle/index.ts";
import type { Attempt } from "../store/index.ts";
import { holdBoth } from "./claims.ts";

/**
 * The restore application, HTTP-neutral: adopt the retained data of `source` (an ended lease
 * EXPIRED lease of the same tenant) into the fresh PENDING `target`, on the backend that
 * holds it (same-backend: the source's confirmed, retained placement owner). In order:
 * ordered lifecycle claims on both leases (work already running on either is refused, not
 * waited for); fresh chain reads of both; the durable admission (the target's restore
 * attempt and the source's claim, one transaction, fsynced) before the backend hears of it;
 * then `POST /restore` and what its answer proves. A definite refusal clears the attempt
 * and hands the source back; an ambiguous answer keeps both until the operation's callback
 * or a positive inventory report settles it (src/provider/store/retained-rows.ts).
 */
export type RestoreOutcome =
  | { kind: "accepted" }
  | { kind: "source_busy" }
  | { kind: "target_busy" }
  | { kind: "target_not_pending" }
  /** No restorable source for this caller (absent, not ended, another tenant's, not retained). */
  | { kind: "source_not_found" }
  /** The caller's ended source was held by a backend an operator retired as lost. */
  | { kind: "storage_lost" }
  /** The source's placement is unresolved, its backend unknown or unreachable, or a read failed. */
  | { kind: "unavailable"; detail: string }
  | { kind: "refused"; status: number; error: string; code?: string }
  | { kind: "ambiguous"; malformed: boolean; detail: string };

export interface RestoreRequest {
  target: string;
  source: string;
  tenant: string;
}

export class Restorer {
  readonly #deps: LifecycleDeps;
  readonly #busy: (lease: string) => boolean;

  /** `busy`: work the lease queue does not show (a provision request on the wire). */
  constructor(deps: LifecycleDeps, busy: (lease: string) => boolean = () => false) {
    this.#deps = deps;
    this.#busy = busy;
  }

  async restore(req: RestoreRequest, signal: AbortSignal): Promise<RestoreOutcome> {
    const { queue } = this.#deps;
    if (queue.isBusy(req.source) || this.#busy(req.source)) return { kind: "source_busy" };
    if (queue.isBusy(req.target) || this.#busy(req.target)) return { kind: "target_busy" };
    return holdBoth(queue, req.source, req.target, () => this.#admitAndSend(req, signal));
  }

  async #admitAndSend(req: RestoreRequest, signal: AbortSignal): Promise<RestoreOutcome> {
    const { store, fleet, clients, config, clock, acks } = this.#deps;
    const log = this.#deps.logger.child({ lease_uuid: req.target, from_lease_uuid: req.source });
    if (store.attemptFor(req.target) !== undefined || store.placement(req.target) !== undefined)
      return { kind: "target_busy" };
    // A chain decision still on its way (e.g. the rejection of a refused empty provision: a
    // lease without meta_hash is provisioned at once) is lifecycle work too: the chain still
    // reads PENDING, but the lease is doomed, and data adopted into it would be stranded.
    // Decisions are made inside the lease's queue, which this restore now holds.
    if (acks.has(req.target)) return { kind: "target_busy" };
    const placement = store.placement(req.source);
    if (placement === undefined) return { kind: "source_not_found" };
    // A lost backend's data is gone for good: said once the source is known to be the caller's.
    const lost = placement.owner !== undefined && fleet.isLost(placement.owner);
    if (!lost && (placement.state !== "confirmed" || placement.owner === undefined))
      return { kind: "unavailable", detail: "source placement is unresolved" };
    const client = placement.owner === undefined ? undefined : clients.get(placement.owner);
    if (!lost && (client === undefined || client.backend.fenced))
      return { kind: "unavailable", detail: `source backend ${placement.owner} cannot be asked` };
    let source: ChainLease | undefined;
    let target: ChainLease | undefined;
    try {
      [source, target] = await Promise.all([this.#read(req.source, signal), this.#read(req.target, signal)]);
    } catch (err) {
      log.warn({ err }, "restore: chain read failed");
      return { kind: "unavailable", detail: "chain read failed" };
    }
    if (
      source === undefined ||
      source.tenant !== req.tenant ||
      source.providerUuid !== config.providerUuid ||
      !leaseEnded(source.state)
    )
      return { kind: "source_not_found" };
    if (lost) return { kind: "storage_lost" };
    if (target === undefined || target.state !== "LEASE_STATE_PENDING") return { kind: "target_not_pending" };
    const retained = store.retained.get(req.source);
    if (retained === undefined || retained.owner !== placement.owner) return { kind: "source_not_found" };
    if (retained.restoreTarget !== undefined) return { kind: "source_busy" };
    const attempt: Attempt = {
      leaseUuid: req.target,
      backend: placement.owner,
      operationId: newUuidV4(),
      kind: "restore",
      createdAt: clock.now(),
    };
    const admitted = store.beginRestore(attempt, req.source);
    if (admitted !== "recorded") return { kind: admitted === "target-busy" ? "target_busy" : "source_busy" };
    await store.durable();
    const outcome = await this.send(attempt, target, req.source, signal);
    log.info(
      { backend: attempt.backend, operation_id: attempt.operationId, outcome: outcome.kind },
      "restore sent",
    );
    return this.#settle(attempt, outcome);
  }

  /** `POST /restore` for the admitted attempt (redelivery goes through the Provisioner's send). */
  send(attempt: Attempt, target: ChainLease, source: string, signal: AbortSignal): Promise<MutationOutcome> {
    const { clients, config } = this.#deps;
    const client = clients.get(attempt.backend);
    if (client === undefined)
      return Promise.resolve({ kind: "not-sent", reason: "not-pinned", detail: "backend not configured" });
    return client.restore({ ...leaseRequest(config, target, attempt), fromLeaseUuid: source }, signal);
  }

  async #settle(attempt: Attempt, outcome: MutationOutcome): Promise<RestoreOutcome> {
    const { store } = this.#deps;
    switch (outcome.kind) {
      case "accepted":
        return { kind: "accepted" };
      case "refused":
      case "not-sent":
        // The backend did not act (or never heard of it): the source gets its data back.
        store.clearRefusedAttempt(attempt.leaseUuid, attempt.operationId);
        await store.durable();
        if (outcome.kind === "not-sent") return { kind: "unavailable", detail: outcome.detail };
        return {
          kind: "refused",
          status: outcome.status,
          error: outcome.error,
          ...(outcome.code === undefined ? {} : { code: outcome.code }),
        };
      case "ambiguous":
        return { kind: "ambiguous", malformed: outcome.reason === "malformed", detail: outcome.detail };
    }
  }

  /** An exact read, bounded by the caller's signal (the tenant request's deadline). */
  #read(lease: string, signal: AbortSignal): Promise<ChainLease | undefined> {
    return this.#deps.chain.getLease(lease, signal);
  }
}
