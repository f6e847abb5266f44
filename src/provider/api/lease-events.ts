import type { LeaseStateName } from "../../chain/port.ts";
import { KeyedMutex } from "../../core/async/index.ts";
import type { Logger } from "../../log.ts";
import type { ApplyResult, VerifiedCallback } from "../lifecycle/index.ts";
import type { EventHub } from "./event-hub.ts";
import type { LeaseReads } from "./lease-reads.ts";

/**
 * Turns what providerd learns about a lease into hub frames. The chain state each frame
 * carries is read through the lease cache (coalesced, under one block old); frames of one
 * lease are published one at a time, in the order they were reported. Publishing never
 * holds up the caller (a callback answer, an upload's 202).
 */
const MAX_ERROR_CHARS = 512;

/** A backend's failure text, made safe to relay: no control characters, bounded. */
export function tenantSafeText(text: string): string {
  const flat = text.replace(/[\n\t]/g, " ").replace(/\p{Cc}/gu, "");
  return flat.length > MAX_ERROR_CHARS ? `${flat.slice(0, MAX_ERROR_CHARS)}…` : flat;
}

/** The status frame an applied callback stands for, if any. */
export function callbackFrame(
  cb: VerifiedCallback,
  result: ApplyResult,
): { status: string; error?: string } | undefined {
  const failed = { status: "failed", error: cb.error };
  switch (result) {
    case "acknowledging":
      return { status: "ready" };
    case "rejecting":
      return failed;
    case "observed":
      if (cb.status === "success") return { status: "ready" };
      return cb.status === "failed" ? failed : undefined;
    default:
      return undefined;
  }
}

export class LeaseEventPublisher {
  readonly #hub: EventHub;
  readonly #leases: LeaseReads;
  readonly #logger: Logger;
  readonly #order = new KeyedMutex();
  readonly #lastState = new Map<string, LeaseStateName>();

  constructor(hub: EventHub, leases: LeaseReads, logger: Logger) {
    this.#hub = hub;
    this.#leases = leases;
    this.#logger = logger;
  }

  /** Publishes `status` for the lease; resolves once its frame went out. */
  publish(leaseUuid: string, status: string, error?: string): Promise<void> {
    return this.#order
      .run(leaseUuid, async () => {
        let state = this.#lastState.get(leaseUuid) ?? "LEASE_STATE_UNSPECIFIED";
        try {
          state = (await this.#leases.read(leaseUuid))?.state ?? state;
        } catch (err) {
          this.#logger.debug({ err, lease_uuid: leaseUuid }, "event frame: chain state unavailable");
        }
        if (this.#lastState.size > 10_000) this.#lastState.clear();
        this.#lastState.set(leaseUuid, state);
        this.#hub.publish(leaseUuid, status, state, error === undefined ? undefined : tenantSafeText(error));
      })
      .catch((err) => this.#logger.warn({ err, lease_uuid: leaseUuid }, "event frame not published"));
  }

  callbackApplied(cb: VerifiedCallback, result: ApplyResult): void {
    const frame = callbackFrame(cb, result);
    if (frame !== undefined) void this.publish(cb.leaseUuid, frame.status, frame.error);
  }
}
