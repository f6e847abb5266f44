import type { LeaseStateName } from "../../chain/port.ts";
import { KeyedMutex } from "../../core/async/index.ts";
import { tenantSafeText } from "../../core/envelope.ts";
import type { Logger } from "../../log.ts";
import type { ApplyResult, VerifiedCallback } from "../lifecycle/index.ts";
import type { EventHub } from "./event-hub.ts";
import type { TenantLeaseReads } from "./tenant-lease-reads.ts";

/**
 * Turns what providerd learns about a lease into hub frames, published one lease at a time
 * in the order they were reported; publishing never holds up the caller (a callback
 * answer, an upload's 202). The chain state a frame carries is read through the lease
 * cache (coalesced, under one block old) while somebody watches the lease. A frame nobody
 * watches takes the state its source already knows (an upload or a provision outcome
 * happens while the lease is PENDING): a burst of 10,000 callbacks must not turn into
 * 10,000 chain queries for frames that may never be read.
 */
/** The instruction a `retained` frame carries in `error` (the stream's documented place for it). */
export const RETAINED_NOTICE =
  "the lease's data was retained; to restore it, open a new lease with the same services and POST /v1/leases/{new_lease_uuid}/restore with this lease as from_lease_uuid";

/** The status frame an applied callback stands for, if any. */
export function callbackFrame(
  cb: VerifiedCallback,
  result: ApplyResult,
): { status: string; error?: string; state?: LeaseStateName } | undefined {
  const failed = { status: "failed", error: cb.error };
  switch (result) {
    // The outcome of a provision: the lease is PENDING until the ack or reject lands.
    case "acknowledging":
      return { status: "ready", state: "LEASE_STATE_PENDING" };
    case "rejecting":
      return { ...failed, state: "LEASE_STATE_PENDING" };
    // Best effort: the lease's status (GET status) is the durable record of the retention.
    case "retained":
      return { status: "retained", error: RETAINED_NOTICE };
    case "observed":
      if (cb.status === "success") return { status: "ready" };
      return cb.status === "failed" ? failed : undefined;
    default:
      return undefined;
  }
}

export class LeaseEventPublisher {
  readonly #hub: EventHub;
  readonly #leases: TenantLeaseReads;
  readonly #logger: Logger;
  readonly #order = new KeyedMutex();
  readonly #lastState = new Map<string, LeaseStateName>();

  constructor(hub: EventHub, leases: TenantLeaseReads, logger: Logger) {
    this.#hub = hub;
    this.#leases = leases;
    this.#logger = logger;
  }

  /**
   * Publishes `status` for the lease; resolves once its frame went out. `knownState` is the
   * chain state the caller knows the lease is in; it stands in for a chain read while
   * nobody watches the lease.
   */
  publish(leaseUuid: string, status: string, error?: string, knownState?: LeaseStateName): Promise<void> {
    return this.#order
      .run(leaseUuid, async () => {
        let state = knownState ?? this.#lastState.get(leaseUuid) ?? "LEASE_STATE_UNSPECIFIED";
        if (knownState === undefined || this.#hub.watched(leaseUuid)) {
          try {
            state = (await this.#leases.read(leaseUuid))?.state ?? state;
          } catch (err) {
            this.#logger.debug({ err, lease_uuid: leaseUuid }, "event frame: chain state unavailable");
          }
        }
        if (this.#lastState.size > 10_000) this.#lastState.clear();
        this.#lastState.set(leaseUuid, state);
        this.#hub.publish(leaseUuid, status, state, error === undefined ? undefined : tenantSafeText(error));
      })
      .catch((err) => this.#logger.warn({ err, lease_uuid: leaseUuid }, "event frame not published"));
  }

  callbackApplied(cb: VerifiedCallback, result: ApplyResult): void {
    const frame = callbackFrame(cb, result);
    if (frame !== undefined) void this.publish(cb.leaseUuid, frame.status, frame.error, frame.state);
  }
}
