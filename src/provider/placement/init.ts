import { existsSync } from "node:fs";
import { FredError } from "../../core/errors.ts";
import type { Inventory } from "../backend-client/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import { PlacementStore } from "../store/index.ts";
import type { ChainHistory } from "./chain-history.ts";
import { type FleetReadDeps, inventoryTransportProblem, readInventory } from "./fleet-read.ts";
import { openToolStore } from "./tool-store.ts";

/**
 * `fred placement init`: the only way a placement store comes into being. It is for a
 * genuinely new provider: the chain shows no lease history and every backend answers
 * complete, empty inventories. Each backend's storage identity (from its response
 * header) is pinned and its empty inventory recorded as the baseline. Recovery after a
 * lost store is a restore from backup, never this.
 */
export interface InitSummary {
  placement_store: string;
  provider_uuid: string;
  chain: { rpc_url: string; lease_history: false };
  backends: { name: string; url: string; storage_id: string; provisions: 0; retentions: 0 }[];
}

export interface InitDeps extends FleetReadDeps {
  chain: ChainHistory;
}

export { inventoryTransportProblem };

/** Why a backend that must be empty is not (undefined when it is). */
export function notEmpty(name: string, inventory: Inventory): string | undefined {
  const { provisions, retentions } = inventory;
  if (provisions.length === 0 && retentions.length === 0) return undefined;
  return `backend ${name} is not empty (${provisions.length} provision(s), ${retentions.length} retention(s))`;
}

function refuse(message: string): FredError {
  return new FredError("ERR_PLACEMENT_INIT_REFUSED", message);
}

export async function initPlacementStore(config: ProviderConfig, deps: InitDeps): Promise<InitSummary> {
  if (config.databaseUrl === undefined && existsSync(config.placementStoreDbPath)) {
    throw refuse(
      `placement store ${config.placementStoreDbPath} already exists; init never replaces one (restore a backup instead)`,
    );
  }
  const fenced = config.backends.filter((b) => b.fenced).map((b) => b.name);
  if (fenced.length > 0) throw refuse(`backend(s) ${fenced.join(", ")} are fenced; init refuses to run`);
  const transport = config.backends.map(inventoryTransportProblem).filter((p) => p !== undefined);
  if (transport.length > 0) throw refuse(transport.join("; "));

  if (await deps.chain.hasLeaseHistory(config.providerUuid, deps.signal)) {
    throw refuse(
      `provider ${config.providerUuid} already has lease history on chain; a placement store cannot be created fresh (restore it from backup)`,
    );
  }

  const pins: InitSummary["backends"] = [];
  for (const backend of config.backends) {
    const inventory = await readInventory(config, backend, undefined, deps, refuse);
    const problem = notEmpty(backend.name, inventory);
    if (problem !== undefined) throw refuse(`${problem}; init needs empty backends`);
    const twin = pins.find((p) => p.storage_id === inventory.storageId);
    if (twin !== undefined) {
      throw refuse(
        `backends ${twin.name} and ${backend.name} report the same storage ID ${inventory.storageId}`,
      );
    }
    pins.push({
      name: backend.name,
      url: backend.url,
      storage_id: inventory.storageId,
      provisions: 0,
      retentions: 0,
    });
  }

  const backends = pins.map((p) => ({
    name: p.name,
    storageId: p.storage_id,
    baseline: { provisions: 0, retentions: 0 },
  }));
  let where: string;
  try {
    await using created = await openToolStore(config, "fred placement init", {
      readonly: false,
      refuse,
      create: { backends, now: deps.clock.now() },
    });
    where = created.where;
  } catch (err) {
    if (!(err instanceof FredError && err.code === "ERR_STORE_EXISTS")) throw err;
    throw refuse(`${err.message}; init never replaces one (restore a backup instead)`);
  }
  return {
    placement_store: where,
    provider_uuid: config.providerUuid,
    chain: { rpc_url: config.rpcUrl, lease_history: false },
    backends: pins,
  };
}

/**
 * Everything the store holds, as JSON-friendly records, read-only: the SQLite file
 * (offline; no network), or with database_url the store in PostgreSQL (a consistent
 * snapshot, while instances run).
 */
export async function inspectPlacementStore(
  config: ProviderConfig,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Record<string, unknown>> {
  await using opened = await openToolStore(config, "fred placement inspect", { readonly: true, env });
  return describeStore(
    opened.store,
    opened.where,
    config.backends.map((b) => b.name),
  );
}

/** `inspect --file`: a snapshot or backup copy, read-only, whichever provider it belongs to. */
export function inspectPlacementCopy(path: string): Record<string, unknown> {
  using store = PlacementStore.openCopy(path);
  return describeStore(store, path, undefined);
}

function describeStore(store: PlacementStore, path: string, configured: string[] | undefined) {
  const copiedAt = store.copies.takenAt();
  return {
    placement_store: path,
    provider_uuid: store.providerUuid,
    copy_taken_at: copiedAt === undefined ? null : new Date(copiedAt).toISOString(),
    ...(configured === undefined ? {} : { baseline_matches_config: store.fleet.baselineMatches(configured) }),
    backends: store.fleet.backends().map((b) => ({
      name: b.name,
      storage_id: b.storageId,
      pinned_at: new Date(b.pinnedAt).toISOString(),
      // Set by retire-backend --lost: its leases are being ended.
      lost_at: b.lostAt === undefined ? null : new Date(b.lostAt).toISOString(),
      ...(configured === undefined ? {} : { configured: configured.includes(b.name) }),
      baseline:
        b.baseline === undefined
          ? null
          : {
              provisions: b.baseline.provisions,
              retentions: b.baseline.retentions,
              at: new Date(b.baseline.at).toISOString(),
            },
    })),
    counts: store.placements.counts(),
    placements: store.placements.placements().map((p) => ({
      lease_uuid: p.leaseUuid,
      state: p.state,
      owner: p.owner ?? null,
      lifecycle_id: p.lifecycleId ?? null,
      candidates: p.candidates,
      updated_at: new Date(p.updatedAt).toISOString(),
    })),
    attempts: store.placements.unresolvedAttempts().map((a) => ({
      lease_uuid: a.leaseUuid,
      backend: a.backend,
      operation_id: a.operationId,
      kind: a.kind,
      created_at: new Date(a.createdAt).toISOString(),
    })),
  };
}
