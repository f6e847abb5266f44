import type { Clock } from "../../core/clock.ts";
import type { ProviderConfig } from "../config/index.ts";
import { membershipRefusal } from "./membership.ts";
import { openToolStore } from "./tool-store.ts";

/**
 * `fred placement retire-backend` (providerd stopped; the backend already removed from
 * `backends`, so nothing is routed to it). Two cases:
 * - an ordinary retirement: only a backend no row names any more (drain it first:
 *   `draining: true` until its leases ended and the reconciler pruned their rows); its
 *   pin is forgotten;
 * - `--lost --confirm <its pinned storage ID>`: its storage is gone for good. The ID must
 *   be typed out, so a typo cannot end a fleet's leases. The backend is recorded as lost;
 *   providerd then ends its leases on chain with BackendStorageLost, answers their reads
 *   410 backend_storage_lost, and prunes each row once its lease ended. Once no row names
 *   it, an ordinary retirement forgets the pin.
 * Either way a backup is written beside the store first.
 */
export interface RetireOptions {
  name: string;
  lost: boolean;
  confirm?: string | undefined;
}

export interface RetireSummary {
  placement_store: string;
  backup: string;
  backend: string;
  storage_id: string;
  action: "pin_removed" | "marked_lost";
  /** For --lost: the leases providerd will end on chain (confirmed placements, attempts). */
  leases: string[];
  /** Conflicts that name the backend: left for `fred placement repair`. */
  conflicts: string[];
}

export async function retireBackend(
  config: ProviderConfig,
  o: RetireOptions,
  clock: Clock,
): Promise<RetireSummary> {
  if (config.backends.some((b) => b.name === o.name)) {
    throw membershipRefusal(
      `backend ${o.name} is still in the config; remove it from backends first (draining: true lets its leases end before that)`,
    );
  }
  await using opened = await openToolStore(config, "fred placement retire-backend", {
    readonly: false,
    refuse: membershipRefusal,
  });
  const { store, where: path } = opened;
  const pin = store.fleet.backends().find((b) => b.name === o.name);
  if (pin === undefined) throw membershipRefusal(`backend ${o.name} is not pinned in the placement store`);
  const placements = store.placements.placements();
  const owned = placements.filter((p) => p.owner === o.name).map((p) => p.leaseUuid);
  const conflicts = placements.filter((p) => p.candidates.includes(o.name)).map((p) => p.leaseUuid);
  const attempts = store.placements
    .unresolvedAttempts()
    .filter((a) => a.backend === o.name)
    .map((a) => a.leaseUuid);
  const leases = [...new Set([...owned, ...attempts])].sort();
  const base = { placement_store: path, backend: o.name, storage_id: pin.storageId };

  if (!o.lost) {
    if (leases.length + conflicts.length > 0) {
      const named = [...leases, ...conflicts].slice(0, 10).join(", ");
      throw membershipRefusal(
        `backend ${o.name} still has ${leases.length} lease(s) and ${conflicts.length} conflict(s) (${named}); ` +
          "let them end first, or, if its storage is lost for good, pass --lost --confirm <its storage ID>",
      );
    }
    const backup = await opened.backup(clock.now());
    store.fleet.removeBackend(o.name);
    await store.durable();
    return { ...base, backup, action: "pin_removed", leases: [], conflicts: [] };
  }
  if (o.confirm !== pin.storageId) {
    throw membershipRefusal(
      `--confirm must be backend ${o.name}'s pinned storage ID (see fred placement inspect); got ${o.confirm ?? "nothing"}`,
    );
  }
  const backup = await opened.backup(clock.now());
  store.fleet.markLost(o.name, clock.now());
  await store.durable();
  return { ...base, backup, action: "marked_lost", leases, conflicts };
}
