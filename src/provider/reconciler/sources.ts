import type { Lifecycle, LifecycleDeps } from "../lifecycle/index.ts";

/** What a sweep reads and writes itself: the chain, the backends, the stores, the ack path. */
export type SweepSources = Pick<
  LifecycleDeps,
  "config" | "chain" | "store" | "fleet" | "payloads" | "clients" | "acks" | "clock" | "logger"
>;

/**
 * The lease work a sweep hands to the lifecycle: its serial queue per lease, and the one
 * provision path (with its write-ahead attempt, bulkhead and group commit) that the event
 * path uses too.
 */
export type LeaseWork = Pick<Lifecycle, "runForLease" | "startProvision" | "provision" | "redeliver">;
