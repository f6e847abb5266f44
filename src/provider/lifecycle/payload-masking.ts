import type { LifecycleDeps } from "./deps.ts";

/**
 * A tenant's registry passwords stay in providerd's payload store only until the backend
 * runs the lease: from then on the backend's journal holds the one real copy (it puts them
 * back into a masked manifest sent again), and the payload store keeps the masked form.
 * Runs after a success callback for its lease, and after each reconciler sweep for every
 * lease still marked (a lost callback, or rows stored before masking existed). A lease
 * whose placement is not confirmed keeps its payload whole: its provision may still need it.
 * A failed write only logs; the next sweep tries again.
 */
export async function maskRunningPayloads(
  d: Pick<LifecycleDeps, "payloads" | "store" | "logger">,
  leases: Iterable<string>,
): Promise<void> {
  const payloads = d.payloads;
  if (payloads === undefined) return;
  let wrote = false;
  for (const lease of leases) {
    if (d.store.placement(lease)?.state !== "confirmed") continue;
    try {
      if (payloads.mask(lease))
        d.logger.info({ lease_uuid: lease }, "registry passwords masked in the stored payload");
      wrote = true;
    } catch (err) {
      d.logger.warn({ err, lease_uuid: lease }, "masking the stored payload failed; the next sweep retries");
    }
  }
  if (wrote) await payloads.durable();
}
