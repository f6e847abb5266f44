/**
 * Pending-lease expiry (EndBlock): a PENDING lease expires once the block time is strictly
 * after created_at + the current pending_timeout; at most 100 per block, oldest first.
 */
import { NANOS_PER_SECOND } from "./settlement.ts";

export const MAX_EXPIRATIONS_PER_BLOCK = 100;

export interface PendingRef {
  uuid: string;
  createdNs: bigint;
}

export function isPastPendingDeadline(createdNs: bigint, blockNs: bigint, timeoutSeconds: bigint): boolean {
  return blockNs > createdNs + timeoutSeconds * NANOS_PER_SECOND;
}

/** `oldestFirst` must be ordered by (created_at, uuid); reading stops at the first live lease. */
export function selectExpired(
  oldestFirst: Iterable<PendingRef>,
  blockNs: bigint,
  timeoutSeconds: bigint,
  cap = MAX_EXPIRATIONS_PER_BLOCK,
): string[] {
  const out: string[] = [];
  for (const ref of oldestFirst) {
    if (out.length >= cap || !isPastPendingDeadline(ref.createdNs, blockNs, timeoutSeconds)) break;
    out.push(ref.uuid);
  }
  return out;
}
