import type { Attempt } from "../store/index.ts";
import { Closer, SINGLE_CLOSE_TRY } from "./closer.ts";
import type { LifecycleDeps } from "./deps.ts";
import type { Provisioner } from "./provisioner.ts";
import { rejectionForFailure } from "./reasons.ts";

/**
 * Attempts with no callback after `provision_callback_timeout`: ask the attempted
 * backend about the lease. Ready → confirm and acknowledge; failed → the positive
 * evidence that lets us reject; unknown to the backend → redeliver the same operation,
 * unless the chain says the lease ended: then deprovision it on the attempted backend,
 * which retires the attempt once accepted ("lease-ended"; a refusal keeps it for the next
 * check); still provisioning or no answer → wait. Silence never rejects a lease.
 */
export type TimeoutVerdict =
  | "confirmed"
  | "rejected"
  | "redelivered"
  | "lease-ended"
  | "waiting"
  | "unanswered";

const LOOKUP_BATCH = 100;

export async function checkOverdueAttempts(
  d: LifecycleDeps,
  provisioner: Provisioner,
  signal: AbortSignal,
  /** One try per backend by default: this check runs again soon and must not stall on one lease. */
  closer: Closer = new Closer(d, SINGLE_CLOSE_TRY),
): Promise<Map<string, TimeoutVerdict>> {
  const verdicts = new Map<string, TimeoutVerdict>();
  const due = d.clock.now() - d.config.provisionCallbackTimeoutMs;
  // Only overdue rows are read: a burst leaves thousands of young attempts behind.
  const overdue = d.store.attemptsCreatedBy(due).filter((a) => !provisioner.inFlight.has(a.leaseUuid));
  reportNewlyOverdue(d, provisioner.overdue, overdue);
  const byBackend = new Map<string, Attempt[]>();
  for (const a of overdue) byBackend.set(a.backend, [...(byBackend.get(a.backend) ?? []), a]);
  for (const [backend, attempts] of byBackend) {
    const client = d.clients.get(backend);
    for (let i = 0; i < attempts.length; i += LOOKUP_BATCH) {
      const batch = attempts.slice(i, i + LOOKUP_BATCH);
      let entries: Map<string, string>;
      try {
        if (client === undefined) throw new Error("backend not configured");
        const found = await client.provisionsFor(
          batch.map((a) => a.leaseUuid),
          signal,
        );
        entries = new Map(found.map((e) => [e.leaseUuid, e.status]));
      } catch (err) {
        d.logger.warn({ err, backend }, "cannot ask the backend about overdue provisions");
        for (const a of batch) verdicts.set(a.leaseUuid, "unanswered");
        continue;
      }
      for (const a of batch) {
        verdicts.set(
          a.leaseUuid,
          await d.queue.run(a.leaseUuid, () =>
            decide(d, provisioner, closer, a, entries.get(a.leaseUuid), signal),
          ),
        );
      }
    }
  }
  return verdicts;
}

/** Each attempt is reported once when it first turns up overdue; `seen` keeps only the current ones. */
function reportNewlyOverdue(d: LifecycleDeps, seen: Set<string>, overdue: readonly Attempt[]): void {
  const now = new Set(overdue.map((a) => a.operationId));
  for (const id of seen) if (!now.has(id)) seen.delete(id);
  for (const a of overdue) {
    if (seen.has(a.operationId)) continue;
    seen.add(a.operationId);
    d.observe.callbackTimeout(a.backend);
  }
}

async function decide(
  d: LifecycleDeps,
  provisioner: Provisioner,
  closer: Closer,
  a: Attempt,
  status: string | undefined,
  signal: AbortSignal,
): Promise<TimeoutVerdict> {
  const current = d.store.attemptFor(a.leaseUuid);
  if (current?.operationId !== a.operationId) return "confirmed";
  const log = d.logger.child({ lease_uuid: a.leaseUuid, backend: a.backend, operation_id: a.operationId });
  if (status === undefined) {
    log.info("no callback and the backend does not know the lease; redelivering");
    let step: Awaited<ReturnType<Provisioner["redeliver"]>>;
    try {
      step = await provisioner.redeliver(a, signal);
    } catch (err) {
      log.warn({ err }, "redelivery failed");
      return "redelivered";
    }
    if (step !== "lease-ended") return "redelivered";
    log.info("the lease ended on chain; deprovisioning it where it was attempted");
    try {
      await closer.close(a.leaseUuid, signal);
    } catch (err) {
      log.warn({ err }, "deprovision of the ended lease failed; the next check retries");
    }
    return "lease-ended";
  }
  if (status === "failed") {
    // As a failed callback would (settleOperation): the backend keeps its failed record.
    d.store.settleOperation(a.leaseUuid, a.operationId, "failed", d.clock.now(), a.backend);
    await d.store.durable();
    log.info("no callback and the backend reports the provision failed; rejecting");
    d.acks.reject(a.leaseUuid, rejectionForFailure(undefined, a.kind));
    return "rejected";
  }
  if (status === "ready") {
    const out = d.store.applyPositiveInventory(a.backend, [a.leaseUuid], d.clock.now());
    if (out.confirmed.includes(a.leaseUuid)) {
      await d.store.durable();
      log.info("no callback but the backend reports the lease ready; acknowledging");
      d.acks.acknowledge(a.leaseUuid);
    }
    return "confirmed";
  }
  return "waiting";
}
