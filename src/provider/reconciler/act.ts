import type { ChainLease } from "../../chain/port.ts";
import { contractItems } from "../../core/lease-rules.ts";
import {
  type Action,
  type CleanupPass,
  type DestructiveAction,
  isDestructive,
  type Plan,
  type Reread,
  rereadGate,
} from "../../core/reconcile/index.ts";
import { maskRunningPayloads, type ProvisionOrder } from "../lifecycle/index.ts";
import { sweepDeadline } from "./deadline.ts";
import type { ReconcilerMetrics } from "./metrics.ts";
import type { LeaseWork, SweepSources } from "./sources.ts";

/**
 * The act phase. Projection actions (durable evidence) are applied first, in one store
 * transaction made durable before anything leaves the process. Every other action runs in
 * its lease's serial queue, one task per lease: its lifecycle actions, then its destructive
 * candidates, which go ahead only if one bounded exact chain re-read of that lease inside
 * the same task reports CLOSED, REJECTED or EXPIRED.
 */
export interface ActContext extends SweepSources {
  lifecycle: LeaseWork;
  /** The listed PENDING leases; an action that needs an ACTIVE lease in full re-reads it. */
  pending: ReadonlyMap<string, ChainLease>;
  metrics: ReconcilerMetrics;
  /** Bound on each chain re-read and backend call. */
  deadlineMs: number;
  signal: AbortSignal;
}

/** Lease tasks running at once (bounds the sweep's fan-out). */
const CONCURRENCY = 32;

export async function act(ctx: ActContext, plan: Plan): Promise<void> {
  const d = ctx;
  const now = d.clock.now();
  const byLease = new Map<string, Action[]>();
  d.store.batch(() => {
    for (const a of plan.actions) {
      if (a.kind === "confirm_attempt") d.store.applyPositiveInventory(a.backend, [a.lease], now);
      else if (a.kind === "adopt_placement") d.store.adoptPlacement(a.lease, a.backend, now);
      else if (a.kind === "retention_seen") d.store.retained.sweepSaw(a.lease, true);
      else if (a.kind === "retention_missed") {
        d.store.retained.sweepSaw(a.lease, false);
        if (a.retire && d.store.retained.retireMissing(a.lease, a.backend))
          d.logger.info(
            { lease_uuid: a.lease, backend: a.backend },
            "reconciler: retained data gone; placement retired",
          );
      } else if (a.kind === "adopt_retention") {
        // An existing record (same owner, by the plan) keeps its lifecycle id; only the mark is added.
        if (d.store.placement(a.lease) === undefined) d.store.adoptPlacement(a.lease, a.backend, now);
        d.store.retained.mark(a.lease, a.backend, d.fleet.pins().get(a.backend) ?? "", now);
      } else if (a.kind === "quarantine") {
        d.store.quarantine(a.lease, a.candidates, now);
        ctx.metrics.conflicts.inc();
      } else {
        const list = byLease.get(a.lease) ?? [];
        list.push(a);
        byLease.set(a.lease, list);
        continue;
      }
      ctx.metrics.actions.inc({ action: a.kind });
    }
  });
  await d.store.durable();
  await maskRunningPayloads(d, (await d.payloads?.holdingSecrets()) ?? []);
  // Workers take the next lease by index (Array.shift is linear: quadratic over 100k leases).
  const queue = [...byLease];
  let taken = 0;
  const worker = async () => {
    for (let next = queue[taken++]; next !== undefined; next = queue[taken++]) {
      const [lease, actions] = next;
      await ctx.lifecycle
        .runForLease(lease, () => actOnLease(ctx, lease, actions))
        .catch((err) => {
          if (!ctx.signal.aborted)
            d.logger.warn({ err, lease_uuid: lease }, "reconciler: lease action failed");
        });
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, worker));
}

async function actOnLease(ctx: ActContext, lease: string, actions: readonly Action[]): Promise<void> {
  const destructive: DestructiveAction[] = [];
  for (const a of actions) {
    if (isDestructive(a)) destructive.push(a);
    else await lifecycleAction(ctx, a);
  }
  if (destructive.length === 0) return;
  const gate = rereadGate(await reread(ctx, lease));
  if (!gate.proceed) {
    for (const a of destructive) ctx.metrics.skips.inc({ pass: passOf(a), reason: gate.reason });
    return;
  }
  for (const a of destructive) await destroy(ctx, a);
}

async function lifecycleAction(ctx: ActContext, a: Exclude<Action, DestructiveAction>): Promise<void> {
  const lc = ctx.lifecycle;
  const d = ctx;
  ctx.metrics.actions.inc({ action: a.kind });
  switch (a.kind) {
    case "acknowledge":
      d.acks.acknowledge(a.lease);
      return;
    case "reject":
      d.acks.reject(a.lease, a.reason);
      return;
    case "close": {
      const [out] = await d.chain.closeLeases([a.lease], a.reason, ctx.signal);
      if (out?.error !== undefined)
        d.logger.warn({ err: out.error, lease_uuid: a.lease }, "reconciler: close failed");
      return;
    }
    case "redeliver": {
      const attempt = d.store.attemptFor(a.lease);
      if (attempt?.operationId !== a.operationId) return;
      await lc.redeliver(attempt, ctx.signal);
      return;
    }
    case "provision": {
      const listed = ctx.pending.get(a.lease);
      if (listed !== undefined && "scope" in a.target) {
        // New work: the provision workflow routes it (and waits for a missing payload).
        lc.startProvision(a.lease, listed);
        return;
      }
      await provisionFromSweep(ctx, a.lease, { target: a.target, payload: a.payload });
      return;
    }
    case "reprovision":
      await provisionFromSweep(ctx, a.lease, {
        target: { backend: a.backend },
        payload: a.payload,
        reprovision: true,
      });
      return;
    case "reconcile_custom_domain": {
      const client = d.clients.get(a.backend);
      if (client === undefined) return;
      const chainLease = await fullLease(ctx, a.lease);
      if (chainLease === undefined) return;
      const out = await client.reconcileCustomDomain(a.lease, contractItems(chainLease.items), ctx.signal);
      if (out.kind !== "accepted")
        d.logger.warn(
          { lease_uuid: a.lease, backend: a.backend, outcome: out.kind },
          "reconciler: custom domain not reconciled",
        );
      return;
    }
    case "restore_lifecycle":
      await restoreLifecycle(ctx, a.lease, a.backend);
      return;
    case "lease_error":
      d.logger.warn({ lease_uuid: a.lease, reason: a.reason }, "reconciler: lease error");
      return;
    default:
      return;
  }
}

/**
 * A provision the plan asked for, on a lease re-read as the plan saw it, through the one
 * provision path (write-ahead attempt with a new operation id; the lease is never moved,
 * and a re-provision keeps the lease's volumes: the backend removes only the failed
 * release's containers).
 */
async function provisionFromSweep(
  ctx: ActContext,
  lease: string,
  order: Omit<ProvisionOrder, "lease">,
): Promise<void> {
  const chainLease = await fullLease(ctx, lease);
  if (chainLease === undefined) return;
  const step = await ctx.lifecycle.provision(lease, { ...order, lease: chainLease }, ctx.signal);
  const log = ctx.logger.child({ lease_uuid: lease, ...order.target });
  if (step === "awaiting-payload")
    log.warn({ payload: order.payload }, "reconciler: no payload to provision with; left for a later sweep");
  else if (step === "sent" || step === "ambiguous" || step === "refused")
    log.info(
      { reprovision: order.reprovision === true, step },
      "reconciler: provisioned on the lease's backend",
    );
}

/**
 * A confirmed placement of a live lease without a lifecycle id: the owner's own record,
 * read now, gives the id back when it reports the workload ready with a typed generation.
 * Anything else (no record, another status, an off-contract or failed read) changes nothing.
 */
async function restoreLifecycle(ctx: ActContext, lease: string, backend: string): Promise<void> {
  const client = ctx.clients.get(backend);
  if (client === undefined) return;
  const log = ctx.logger.child({ lease_uuid: lease, backend });
  let record: Awaited<ReturnType<typeof client.provisionInfo>>;
  try {
    record = await sweepDeadline(ctx.clock, ctx.deadlineMs, ctx.signal, (s) =>
      client.provisionInfo(lease, s),
    );
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    log.warn({ err }, "reconciler: owner's record not read; lifecycle left for a later sweep");
    return;
  }
  const generation = record?.lifecycle_generation;
  if (record?.status !== "ready" || generation?.kind !== "typed") {
    log.warn({ status: record?.status }, "reconciler: owner's record names no lifecycle; left as it is");
    return;
  }
  if (ctx.store.restoreLifecycle(lease, backend, generation.id)) {
    await ctx.store.durable();
    log.info("reconciler: lifecycle restored from the owner's record");
  }
}

/** The bounded exact read of one lease: undefined when not found, "failed" when the read failed. */
async function exactRead(ctx: ActContext, lease: string): Promise<ChainLease | undefined | "failed"> {
  const chain = ctx.chain;
  try {
    return await sweepDeadline(ctx.clock, ctx.deadlineMs, ctx.signal, (s) => chain.getLease(lease, s));
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    return "failed";
  }
}

/** The destructive gate's re-read: not found and a failed read are kept apart. */
async function reread(ctx: ActContext, lease: string): Promise<Reread> {
  const l = await exactRead(ctx, lease);
  if (l === "failed") return { kind: "failed" };
  return l === undefined ? { kind: "not_found" } : { kind: "found", state: l.state };
}

/**
 * The full lease a provision or a custom-domain push needs: the listed one if PENDING, else
 * an exact re-read, used only while the lease is still ACTIVE (as the plan saw it). Anything
 * else leaves the action to a later sweep.
 */
async function fullLease(ctx: ActContext, lease: string): Promise<ChainLease | undefined> {
  const listed = ctx.pending.get(lease);
  if (listed !== undefined) return listed;
  const l = await exactRead(ctx, lease);
  if (l !== "failed" && l?.state === "LEASE_STATE_ACTIVE") return l;
  ctx.logger.warn(
    { lease_uuid: lease, reread: l === "failed" ? "failed" : (l?.state ?? "not_found") },
    "reconciler: lease not re-read as ACTIVE; action left for a later sweep",
  );
  return undefined;
}

async function destroy(ctx: ActContext, a: DestructiveAction): Promise<void> {
  const d = ctx;
  ctx.metrics.actions.inc({ action: a.kind });
  const log = d.logger.child({ lease_uuid: a.lease });
  switch (a.kind) {
    case "orphan_deprovision_candidate": {
      const client = d.clients.get(a.backend);
      if (client === undefined) return;
      const out = await client.deprovision(a.lease, ctx.signal);
      if (out.kind !== "accepted") {
        log.warn({ backend: a.backend, outcome: out.kind }, "reconciler: orphan deprovision not confirmed");
        return;
      }
      log.info({ backend: a.backend }, "reconciler: deprovisioned the workload of an ended lease");
      if (a.retireAttempt && d.store.retireAttempt(a.lease, a.backend)) await d.store.durable();
      return;
    }
    case "payload_cleanup_candidate":
      if (await d.payloads?.delete(a.lease)) log.info("reconciler: dropped the payload of an ended lease");
      return;
    case "placement_prune_candidate":
      if (d.store.prunePlacement(a.lease)) log.info("reconciler: pruned the placement of an ended lease");
      return;
  }
}

function passOf(a: DestructiveAction): CleanupPass {
  if (a.kind === "orphan_deprovision_candidate") return "orphan";
  return a.kind === "payload_cleanup_candidate" ? "payload" : "placement";
}
