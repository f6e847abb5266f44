import type { Logger } from "../../log.ts";
import type { PayloadRecords, Placements } from "../store/index.ts";
import { type Command, MaintenanceJournal, type StoredAnswer, sameInstant } from "./journal.ts";

export type { Command } from "./journal.ts";

/**
 * How a command ends. A completion callback settles a command only when everything it
 * names is exactly what was admitted: the maintenance_id, the backend whose key verified
 * the signature, the lifecycle id in the URL and the echoed admitted_at instant. Anything
 * else (a custom-domain completion, a stale or replayed one) settles nothing.
 * A successful update is not settled at once: it is *confirmed* (promotion authorized)
 * and settles only once its manifest is the lease's payload (`promote`), which a crash
 * between the two leaves to the recovery pass.
 */
export interface CompletionDeps {
  store: Placements;
  clock: { now(): number };
  logger: Logger;
}

export interface Completion {
  leaseUuid: string;
  backend: string;
  capability: { kind: "operation" | "lifecycle"; id: string };
  status: "success" | "failed" | "deprovisioned";
  maintenanceId?: string;
  maintenanceAdmittedAt?: string;
}

/** The 202 a command's success (and a restart's failure) replays, and the other final answers. */
export const ANSWERS = {
  accepted: { status: 202 } as StoredAnswer,
  updateFailed: {
    status: 409,
    error: "the update failed; the previous manifest is still the lease's",
  } as StoredAnswer,
  // The reference's text for a lease that is not active, as the live refusal answers it.
  ended: { status: 409, error: "lease not found or not active", reason: "lease_not_active" } as StoredAnswer,
};

/**
 * Applies an authenticated lifecycle callback's maintenance fields, inside the callback's
 * store transaction. Returns the command when it is an update whose manifest is now to
 * be promoted; undefined otherwise (settled here, or nothing to settle).
 */
export function completeMaintenance(d: CompletionDeps, cb: Completion): Command | undefined {
  if (cb.maintenanceId === undefined || cb.capability.kind !== "lifecycle") return undefined;
  const journal = MaintenanceJournal.of(d.store);
  const c = journal.byMaintenanceId(cb.leaseUuid, cb.maintenanceId);
  const log = d.logger.child({ lease_uuid: cb.leaseUuid, maintenance_id: cb.maintenanceId });
  if (
    c === undefined ||
    c.phase === "settled" ||
    c.phase === "confirmed" ||
    c.backend !== cb.backend ||
    c.lifecycleId !== cb.capability.id ||
    cb.maintenanceAdmittedAt === undefined ||
    !sameInstant(c.admittedAtUs, cb.maintenanceAdmittedAt)
  ) {
    log.debug("maintenance completion names no pending command exactly; nothing settled");
    return undefined;
  }
  const now = d.clock.now();
  if (cb.status === "success" && c.kind === "update") {
    journal.confirmed(c.leaseUuid, c.maintenanceId);
    log.info("update succeeded; promoting its manifest");
    return c;
  }
  const failedUpdate = cb.status !== "success" && c.kind === "update";
  journal.settle(
    c.leaseUuid,
    c.maintenanceId,
    cb.status === "success" ? "succeeded" : "failed",
    failedUpdate ? ANSWERS.updateFailed : ANSWERS.accepted,
    now,
  );
  log.info({ kind: c.kind, status: cb.status }, "maintenance command settled by its completion");
  return undefined;
}

/**
 * Writes a confirmed update's manifest as the lease's payload (with its own SHA-256), then
 * settles the command; each step durable before the next. A failure leaves the command
 * confirmed, for the next recovery pass. Returns whether it settled.
 */
export async function promote(
  d: CompletionDeps & { payloads: PayloadRecords | undefined },
  c: Command,
): Promise<boolean> {
  const journal = MaintenanceJournal.of(d.store);
  const current = journal.byMaintenanceId(c.leaseUuid, c.maintenanceId);
  if (current?.phase !== "confirmed" || current.payload === undefined || d.payloads === undefined)
    return false;
  const sha256 = await d.payloads.promote(c.leaseUuid, current.payload, d.clock.now());
  await d.payloads.durable();
  journal.settle(c.leaseUuid, c.maintenanceId, "succeeded", ANSWERS.accepted, d.clock.now());
  await journal.durable();
  d.logger.info(
    { lease_uuid: c.leaseUuid, maintenance_id: c.maintenanceId, sha256 },
    "updated manifest promoted to the lease's payload",
  );
  return true;
}
