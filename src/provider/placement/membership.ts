import { FredError } from "../../core/errors.ts";
import type { ProviderConfig } from "../config/index.ts";
import { type FleetReadDeps, fleetReadProblems, readInventory } from "./fleet-read.ts";
import { notEmpty } from "./init.ts";
import { openToolStore } from "./tool-store.ts";

/**
 * `fred placement add-backend` (providerd stopped): a topology membership change. The
 * README's rule is that it needs identity-bearing answers from the complete proposed
 * fleet, so every configured backend is read: the pinned ones must answer as their pins,
 * the new one must be empty and carry a storage ID nobody else has. Only then is a backup
 * taken and the new pin plus a fresh baseline for every backend committed, in one
 * transaction. providerd then starts with the new backend (routing needs no record: it
 * picks among configured backends by SKU and load).
 */
export interface AddBackendSummary {
  placement_store: string;
  backup: string;
  added: { name: string; url: string; storage_id: string; provisions: 0; retentions: 0 };
  baselines: { name: string; storage_id: string; provisions: number; retentions: number }[];
}

export function membershipRefusal(message: string): FredError {
  return new FredError("ERR_PLACEMENT_MEMBERSHIP_REFUSED", message);
}

export async function addBackend(
  config: ProviderConfig,
  name: string,
  deps: FleetReadDeps,
): Promise<AddBackendSummary> {
  const backend = config.backends.find((b) => b.name === name);
  if (backend === undefined) {
    throw membershipRefusal(`backend ${name} is not in the config; list it under backends first`);
  }
  const problems = fleetReadProblems(config);
  if (problems.length > 0) throw membershipRefusal(`${problems.join("; ")}; add-backend refuses to run`);

  await using opened = await openToolStore(config, "fred placement add-backend", {
    readonly: false,
    refuse: membershipRefusal,
  });
  const { store, where: path } = opened;
  const pins = store.fleet.pins();
  if (pins.has(name))
    throw membershipRefusal(`backend ${name} is already pinned (storage ${pins.get(name)})`);
  const configured = new Set(config.backends.map((b) => b.name));
  const unlisted = [...pins.keys()].filter((n) => !configured.has(n));
  if (unlisted.length > 0) {
    throw membershipRefusal(
      `pinned backend(s) ${unlisted.join(", ")} are not in the config: the proposed fleet is incomplete`,
    );
  }

  const baselines: AddBackendSummary["baselines"] = [];
  let added: AddBackendSummary["added"] | undefined;
  for (const b of config.backends) {
    const inventory = await readInventory(config, b, pins.get(b.name), deps, membershipRefusal);
    if (b.name !== name) {
      const counts = { provisions: inventory.provisions.length, retentions: inventory.retentions.length };
      baselines.push({ name: b.name, storage_id: inventory.storageId, ...counts });
      continue;
    }
    const problem = notEmpty(name, inventory);
    if (problem !== undefined) throw membershipRefusal(`${problem}; a new backend must be empty`);
    const twin = [...pins].find(([, sid]) => sid === inventory.storageId);
    if (twin !== undefined) {
      throw membershipRefusal(
        `backend ${name} reports storage ID ${inventory.storageId}, already pinned to ${twin[0]}`,
      );
    }
    added = { name, url: b.url, storage_id: inventory.storageId, provisions: 0, retentions: 0 };
  }
  if (added === undefined) throw membershipRefusal(`backend ${name} was not read`);

  const now = deps.clock.now();
  const backup = await opened.backup(now);
  store.placements.batch(() => {
    store.fleet.addBackend(
      { name, storageId: added.storage_id, baseline: { provisions: 0, retentions: 0 } },
      now,
    );
    for (const b of baselines) store.fleet.recordBaseline(b.name, b, now);
  });
  await store.durable();
  return { placement_store: path, backup, added, baselines };
}
