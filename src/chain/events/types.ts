/** Typed lease events the feed delivers, and the items each consumer reads. */

export const LEASE_EVENT_KINDS = [
  "lease_created",
  "lease_closed",
  "lease_expired",
  "lease_auto_closed",
  // A tenant withdrew a PENDING lease (it is REJECTED on chain). Not among the reference's
  // subscriptions; we listen so a lease cancelled mid-provision is torn down at once.
  "lease_cancelled",
  // A tenant set or cleared an item's custom domain (MsgSetItemCustomDomain): the owner
  // backend re-reads the lease's domains (the feed's second socket, see feed.ts).
  "lease_custom_domain_set",
  "lease_custom_domain_cleared",
] as const;
export type LeaseEventKind = (typeof LEASE_EVENT_KINDS)[number];

export interface LeaseEvent {
  kind: LeaseEventKind;
  leaseUuid: string;
  providerUuid: string;
  tenant: string;
  /** Block height the event was committed in (0 when the frame did not say). */
  height: number;
  /** Upper-case hex tx hash for tx events; undefined for block (EndBlock) events. */
  txHash: string | undefined;
  /**
   * Extra attributes read when they are unambiguous: `reason` (lease_expired,
   * lease_auto_closed) and `closed_by` (lease_closed).
   */
  reason: string | undefined;
}

export type ResyncReason = "reconnect" | "overflow";

export type FeedItem = { type: "event"; event: LeaseEvent } | { type: "resync"; reason: ResyncReason };

/** One CometBFT ABCI event as found in tx results, NewBlockEvents and block_results. */
export interface AbciEvent {
  type: string;
  attributes: { key: string; value: string }[];
}

/** What parsing one source produced: the events for us and how many entries were unusable. */
export interface ParseResult {
  events: LeaseEvent[];
  malformed: number;
}
