import type { ChainLease } from "../../chain/port.ts";
import { isBillingOnly, type Lifecycle, leaseEnded } from "../lifecycle/index.ts";
import type { Attempt } from "../store/index.ts";

/**
 * Startup and resync recovery — the part of reconciliation the lifecycle needs:
 * 1. read both inventories of every unfenced backend (the client checks every page
 *    against the pinned storage ID) and re-record its baseline;
 * 2. settle attempts the attempted backend positively reports as finished, and learn
 *    each reported lease's status;
 * 3. redeliver every other unresolved attempt with its original operation id; an attempt
 *    whose lease ended on chain (CLOSED/REJECTED/EXPIRED, read exactly) is instead
 *    deprovisioned on its backend, and retired once that backend accepts — this also
 *    applies to attempts the backend still reports in progress, so a lease cancelled
 *    while it was provisioning is stopped instead of finishing for nobody;
 * 4. for PENDING leases on chain: acknowledge billing-only ones and ones whose confirmed
 *    owner reports them ready, reject ones it reports failed, and start the provision
 *    workflow for leases with no record at all (a missed `lease_created`).
 * Absence proves nothing: a silent backend defers every lease tied to it.
 */
export interface RecoveryReport {
  complete: boolean;
  answered: string[];
  unanswered: string[];
  confirmed: number;
  redelivered: number;
  acknowledged: number;
  rejected: number;
  started: number;
  deferred: number;
}

/** Inventory statuses that mean the backend finished working on the provision. */
const SETTLED_STATUSES = new Set(["ready", "failed"]);

export async function runRecovery(lifecycle: Lifecycle, signal: AbortSignal): Promise<RecoveryReport> {
  const d = lifecycle.deps;
  const report: RecoveryReport = {
    complete: true,
    answered: [],
    unanswered: [],
    confirmed: 0,
    redelivered: 0,
    acknowledged: 0,
    rejected: 0,
    started: 0,
    deferred: 0,
  };
  const status = new Map<string, { backend: string; status: string }>();
  const retained = new Set<string>();

  await Promise.all(
    d.config.backends.map(async (b) => {
      const client = d.clients.get(b.name);
      if (b.fenced || client === undefined) {
        report.unanswered.push(b.name);
        return;
      }
      try {
        const inv = await client.inventory(signal);
        d.store.recordBaseline(
          b.name,
          { provisions: inv.provisions.length, retentions: inv.retentions.length },
          d.clock.now(),
        );
        for (const p of inv.provisions) status.set(p.leaseUuid, { backend: b.name, status: p.status });
        for (const r of inv.retentions) retained.add(r);
        const finished = inv.provisions.filter((p) => SETTLED_STATUSES.has(p.status)).map((p) => p.leaseUuid);
        const out = d.store.applyPositiveInventory(b.name, finished, d.clock.now());
        report.confirmed += out.confirmed.length;
        report.answered.push(b.name);
      } catch (err) {
        d.logger.warn({ err, backend: b.name }, "recovery: backend inventory unavailable");
        report.unanswered.push(b.name);
      }
    }),
  );
  report.complete = report.unanswered.every((n) => d.config.backends.find((b) => b.name === n)?.fenced);
  // What the inventories settled is on disk before anything below reaches the chain.
  await d.store.durable();

  for (const attempt of d.store.unresolvedAttempts()) {
    if (!report.answered.includes(attempt.backend)) {
      report.deferred++;
      continue;
    }
    const seen = status.get(attempt.leaseUuid);
    if (seen?.backend === attempt.backend) {
      // Still provisioning there: its callback will come, unless the lease has ended.
      void lifecycle
        .runForLease(attempt.leaseUuid, () => closeIfEnded(lifecycle, attempt, signal))
        .catch((err) => d.logger.warn({ err, lease_uuid: attempt.leaseUuid }, "recovery: close failed"));
      continue;
    }
    report.redelivered++;
    void lifecycle
      .runForLease(attempt.leaseUuid, async () => {
        const step = await lifecycle.provisioner.redeliver(attempt, signal);
        if (step === "lease-ended") await closeEnded(lifecycle, attempt, signal);
      })
      .catch((err) => d.logger.warn({ err, lease_uuid: attempt.leaseUuid }, "recovery: redelivery failed"));
  }

  let pending: ChainLease[];
  try {
    pending = await d.chain.leasesByProvider(d.config.providerUuid, "LEASE_STATE_PENDING", signal);
  } catch (err) {
    d.logger.warn({ err }, "recovery: cannot list PENDING leases");
    report.complete = false;
    return report;
  }
  for (const lease of pending) {
    if (
      isBillingOnly(
        d.config,
        lease.items.map((i) => i.skuUuid),
      )
    ) {
      d.acks.acknowledge(lease.uuid);
      report.acknowledged++;
      continue;
    }
    const placement = d.store.placement(lease.uuid);
    if (d.store.attemptFor(lease.uuid) !== undefined || placement?.state === "conflict") continue;
    if (placement !== undefined) {
      const owner = placement.owner as string;
      const seen = status.get(lease.uuid);
      if (!report.answered.includes(owner) || seen?.backend !== owner) {
        report.deferred++;
      } else if (seen.status === "ready") {
        d.acks.acknowledge(lease.uuid);
        report.acknowledged++;
      } else if (seen.status === "failed") {
        d.acks.reject(lease.uuid, "provisioning failed");
        report.rejected++;
      }
      continue;
    }
    if (status.has(lease.uuid) || retained.has(lease.uuid) || !report.complete) {
      report.deferred++;
      continue;
    }
    lifecycle.startProvision(lease.uuid, lease);
    report.started++;
  }
  d.logger.info({ ...report, answered: undefined, unanswered: report.unanswered }, "recovery pass done");
  return report;
}

/** Run inside the lease's queue: deprovision an in-progress attempt's lease if it has ended. */
async function closeIfEnded(lifecycle: Lifecycle, attempt: Attempt, signal: AbortSignal): Promise<void> {
  if (lifecycle.deps.store.attemptFor(attempt.leaseUuid)?.operationId !== attempt.operationId) return;
  const lease = await lifecycle.provisioner.leases.get(attempt.leaseUuid);
  if (lease !== undefined && leaseEnded(lease.state)) await closeEnded(lifecycle, attempt, signal);
}

async function closeEnded(lifecycle: Lifecycle, attempt: Attempt, signal: AbortSignal): Promise<void> {
  lifecycle.deps.logger.info(
    { lease_uuid: attempt.leaseUuid, backend: attempt.backend, operation_id: attempt.operationId },
    "recovery: the lease of an unresolved attempt ended on chain; deprovisioning it",
  );
  await lifecycle.closer.close(attempt.leaseUuid, signal);
}
