import type { ChainLease } from "../../chain/port.ts";
import { Coalescer } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { DiagnosticsLookup } from "./diagnostics.ts";
import type { FrameSources } from "./event-hub.ts";

/**
 * The backend's provision record of a lease as providerd last read it, with the chain
 * state and maintenance revision it was read beside.
 */
export interface ProvisionRead {
  found: DiagnosticsLookup;
  state: ChainLease["state"];
  revision: string;
}

/**
 * How long a read provision record is served without asking the backend again. A `ready`
 * or `retained` record changes only with a callback (the contract has the backend call
 * back every runtime failure and every result), a new chain state, or a restart/update,
 * and each of those drops it here (TenantContext wires the callbacks): so it is kept up to
 * `settledMs`, which bounds what a lost or delayed callback can leave stale. Any other
 * answer (provisioning, failed, not found) is kept `transitionalMs`, under one block.
 */
export function provisionReadTtl(transitionalMs: number, settledMs: number): (read: ProvisionRead) => number {
  return (read) => {
    const status = read.found.kind === "found" ? read.found.diagnostics.status : undefined;
    return status === "ready" || status === "retained" ? settledMs : transitionalMs;
  };
}

/** How long a settled (`ready`, `retained`) provision record is served: see provisionReadTtl. */
export const SETTLED_PROVISION_READ_MS = 10_000;

/**
 * The status route's provision reads by lease: a settled record is kept
 * SETTLED_PROVISION_READ_MS and dropped as soon as a callback for its lease is applied;
 * anything else `transitionalMs` (0, in tests, means never reuse, settled or not).
 */
export function provisionReads(o: {
  clock: Clock;
  transitionalMs: number;
  callbacks: FrameSources["callbacks"];
}): Coalescer<ProvisionRead> {
  const settledMs = o.transitionalMs === 0 ? 0 : SETTLED_PROVISION_READ_MS;
  const reads = new Coalescer<ProvisionRead>({
    clock: o.clock,
    ttlMs: provisionReadTtl(o.transitionalMs, settledMs),
  });
  o.callbacks?.on("callback-applied", (cb) => reads.invalidate(cb.leaseUuid));
  return reads;
}
