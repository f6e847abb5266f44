import { join } from "node:path";
import { Journal, RetentionStore } from "../../src/backend/kit/index.ts";
import { MockSubstrate } from "../../src/backend/mock/substrate.ts";
import { openCosmosChain } from "../../src/chain/cosmos/adapter.ts";
import { systemClock } from "../../src/core/clock.ts";
import { startDevnet } from "../../src/devnet/main.ts";
import type { Logger } from "../../src/log.ts";
import { MaintenanceJournal } from "../../src/provider/maintenance/index.ts";
import { PayloadStore, PlacementStore, TokenTracker } from "../../src/provider/store/index.ts";

/**
 * What an upgrade must keep, read through the stores' own classes (read-write, so today's
 * migrations run first). The fixture generator (scripts/make-upgrade-fixtures.ts) writes
 * this reading into each fixture's manifest.json with the release that made the files; the
 * upgrade test reads the files again with today's code and must get the same. When a
 * store's reader changes shape, keep these functions producing the fields they produce
 * now: every committed manifest was written with them.
 *
 * Where a store has no listing call (tombstones, operation ids, the outbox, maintenance
 * ids), the ids come from a plain SELECT on the store's connection and each record is
 * then read through the store.
 */

export interface ProviderdRecords {
  provider_uuid: string;
  backends: unknown[];
  placements: unknown[];
  attempts: unknown[];
  retained: unknown[];
  maintenance: unknown[];
  payloads: { lease_uuid: string; sha256: string; bytes: number; promoted: boolean; stored_at: number }[];
  token_count: number;
}

export async function readProviderd(dir: string, providerUuid: string): Promise<ProviderdRecords> {
  const store = PlacementStore.open(join(dir, "placements.db"), providerUuid);
  let records: Omit<ProviderdRecords, "payloads" | "token_count">;
  try {
    const journal = MaintenanceJournal.of(store.placements);
    const keys = store.placements.db
      .prepare<[], { lease_uuid: string; command_key: string }>(
        "SELECT lease_uuid, command_key FROM maintenance ORDER BY lease_uuid, command_key",
      )
      .all();
    records = {
      provider_uuid: store.providerUuid,
      backends: store.fleet.backends(),
      placements: store.placements.placements(),
      attempts: store.placements.unresolvedAttempts(),
      retained: store.placements.retained.all(),
      maintenance: keys.map((k) => {
        const c = journal.byKey(k.lease_uuid, k.command_key);
        if (c === undefined) throw new Error(`maintenance ${k.command_key} vanished`);
        return { ...c, payload: c.payload?.toString("base64") };
      }),
    };
  } finally {
    store.close();
  }
  const payloads = PayloadStore.open(join(dir, "payloads.db"));
  let payloadRecords: ProviderdRecords["payloads"];
  try {
    payloadRecords = [];
    for (const lease of await payloads.leases()) {
      // get() re-hashes the bytes: a damaged row throws here.
      const p = await payloads.get(lease);
      if (p === undefined) throw new Error(`payload of ${lease} vanished`);
      payloadRecords.push({
        lease_uuid: p.leaseUuid,
        sha256: p.sha256,
        bytes: p.payload.length,
        promoted: p.promoted,
        stored_at: p.storedAt,
      });
    }
  } finally {
    payloads.close();
  }
  const tokens = TokenTracker.open(join(dir, "tokens.db"));
  try {
    return { ...records, payloads: payloadRecords, token_count: await tokens.size() };
  } finally {
    tokens.close();
  }
}

export interface JournalRecords {
  storage_id: string;
  leases: unknown[];
  releases: Record<string, unknown[]>;
  tombstones: string[];
  operations: unknown[];
  outbox: unknown[];
  diagnostics: unknown[];
  retentions: unknown[];
  maintenance: unknown[];
}

export function readJournal(path: string, storageId: string, backendName: string): JournalRecords {
  const journal = new Journal({ path, mode: "verify", storageId, backendName });
  try {
    const ids = (sql: string) => journal.db.prepare<[], string>(sql).pluck().all();
    const leases = journal.listLeases(undefined, undefined);
    const tombstones = ids("SELECT lease_uuid FROM tombstones ORDER BY lease_uuid");
    for (const t of tombstones) {
      if (!journal.isTombstoned(t)) throw new Error(`tombstone ${t} is not honoured`);
    }
    return {
      storage_id: journal.storageId,
      leases: leases.map((l) => ({ ...l, payload: l.payload?.toString("base64") })),
      releases: Object.fromEntries(
        leases.map((l) => [
          l.leaseUuid,
          journal.releases(l.leaseUuid).map((r) => ({ ...r, manifest: r.manifest?.toString("base64") })),
        ]),
      ),
      tombstones,
      operations: ids("SELECT operation_id FROM operations ORDER BY operation_id").map((id) => ({
        operation_id: id,
        ...journal.operation(id),
      })),
      outbox: journal.db
        .prepare(
          "SELECT seq, delivery_id, lease_uuid, kind, url, body, storage_id, created_at FROM outbox ORDER BY seq",
        )
        .all(),
      diagnostics: ids("SELECT lease_uuid FROM diagnostics ORDER BY lease_uuid").map((l) =>
        journal.diagnostics.get(l),
      ),
      retentions: new RetentionStore(journal)
        .all()
        .map((r) => ({ ...r, payload: r.payload?.toString("base64") })),
      maintenance: ids("SELECT maintenance_id FROM maintenance ORDER BY maintenance_id").map((id) => {
        const m = journal.maintenance.get(id);
        return { ...m, payload: m?.payload?.toString("base64") };
      }),
    };
  } finally {
    journal.close();
  }
}

/** The mock backend's substrate on its state file (`<journal>.substrate`), with no failure injected. */
export function openMockState(statePath: string): MockSubstrate {
  return new MockSubstrate({
    clock: systemClock,
    backendName: "mock-1",
    delayMs: 0,
    failRate: 0,
    failLeases: new Set(),
    hangLeases: new Set(),
    statePath,
  });
}

/** The mock backend's fake workloads, as its inventory reports them. */
export async function readMockWorkloads(statePath: string): Promise<unknown[]> {
  const substrate = openMockState(statePath);
  try {
    const found = await substrate.inventory();
    return found.sort((a, b) => (a.leaseUuid < b.leaseUuid ? -1 : 1));
  } finally {
    await substrate.close();
  }
}

export interface DevnetRecords {
  chain_id: string;
  height: number;
  leases: { uuid: string; tenant: string; state: string; meta_hash: string }[];
}

/** Starts the devnet on `home` and lists the provider's leases through the chain client. */
export async function readDevnet(home: string, providerUuid: string, logger: Logger): Promise<DevnetRecords> {
  const devnet = await startDevnet({ home, rpcPort: 0, blockTimeMs: 0, logger });
  try {
    const chain = await openCosmosChain({ rpcUrl: devnet.url });
    try {
      const leases = await chain.leasesByProvider(providerUuid, undefined);
      return {
        chain_id: devnet.chainId,
        height: devnet.height(),
        leases: leases
          .map((l) => ({ uuid: l.uuid, tenant: l.tenant, state: l.state, meta_hash: l.metaHash }))
          .sort((a, b) => (a.uuid < b.uuid ? -1 : 1)),
      };
    } finally {
      chain.disconnect();
    }
  } finally {
    await devnet.stop();
  }
}
