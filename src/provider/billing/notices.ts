import type { LeaseEvent } from "../../chain/events/types.ts";
import type { EventHub } from "../api/index.ts";
import { CLOSE_REASON, type CreditNotices } from "./credit-monitor.ts";

/**
 * Where the credit monitor's warnings go: notice frames on the lease's event stream, for
 * clients that opted in (`?notices=credit`); the hub stamps each with the next seq.
 * `hub` is read at call time (the tenant API is built after the billing jobs).
 */
export function creditNotices(hub: EventHub): CreditNotices {
  return {
    creditLow: (leaseUuid, depletesAtMs) =>
      hub.notify(leaseUuid, {
        type: "credit_low",
        lease_uuid: leaseUuid,
        depletes_at: new Date(depletesAtMs).toISOString(),
      }),
    closing: (leaseUuid, reason) => hub.notify(leaseUuid, { type: "closing", lease_uuid: leaseUuid, reason }),
  };
}

/**
 * The lifecycle event for a lease the monitor closed (its close tx confirmed it): the
 * lifecycle deprovisions it as it does on the chain's own `lease_closed`, which follows on
 * the feed (a second deprovision of an ended lease is a no-op on the backend).
 */
export function closedByMonitor(providerUuid: string, leaseUuid: string, tenant: string): LeaseEvent {
  return {
    kind: "lease_closed",
    leaseUuid,
    providerUuid,
    tenant,
    height: 0,
    txHash: undefined,
    reason: CLOSE_REASON,
  };
}
