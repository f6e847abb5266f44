import { join } from "node:path";
import { MaintenanceJournal } from "../../src/provider/maintenance/index.ts";
import { PayloadStore, PlacementStore, TokenTracker } from "../../src/provider/store/index.ts";
import type { FixtureLeases } from "./devnet.ts";
import { AT, BACKENDS, OPS, TOKENS } from "./ids.ts";

/**
 * providerd's three stores as a running provider leaves them, written through the store
 * classes: confirmed placements (one with a lifecycle id from its callback, one adopted
 * from a report without one), a conflict, provision and restore attempts in flight, a
 * retained record, restart and update commands in the maintenance journal (one settled,
 * one pending), uploaded and promoted payloads, and spent tenant tokens.
 */
export async function writeProviderdStores(dir: string, chain: FixtureLeases): Promise<void> {
  const { leases: l } = chain;
  const store = PlacementStore.create(
    join(dir, "placements.db"),
    chain.providerUuid,
    BACKENDS.map((b) => ({
      name: b.name,
      storageId: b.storageId,
      baseline: { provisions: 0, retentions: 0 },
    })),
    AT,
  );
  try {
    const attempt = (lease: string, operationId: string, backend: string, at: number) =>
      store.placements.recordAttempt({
        leaseUuid: lease,
        operationId,
        backend,
        kind: "provision",
        createdAt: at,
      });
    // Placed and confirmed by the exact operation's success callback.
    attempt(l.active, OPS.active, "docker-1", AT + 1_000);
    store.placements.settleOperation(l.active, OPS.active, "success", AT + 2_000);
    attempt(l.retained, OPS.retained, "docker-1", AT + 1_000);
    store.placements.settleOperation(l.retained, OPS.retained, "success", AT + 2_000);
    // Confirmed by a positive inventory report (no lifecycle id).
    store.placements.adoptPlacement(l.served, "mock-1", AT + 3_000);
    store.placements.quarantine(l.disputed, ["docker-1", "mock-1"], AT + 3_000);
    // Written ahead, no outcome yet.
    attempt(l.pending, OPS.pending, "docker-1", AT + 4_000);
    attempt(l.probing, OPS.probing, "mock-1", AT + 4_000);
    attempt(l.failed, OPS.failed, "docker-1", AT + 4_000);
    // The owner reported the closed lease's data kept; a restore into a new lease is in flight.
    store.placements.retained.mark(l.retained, "docker-1", BACKENDS[0].storageId, AT + 5_000);
    const restore = store.placements.beginRestore(
      {
        leaseUuid: l.restoring,
        operationId: OPS.restoring,
        backend: "docker-1",
        kind: "restore",
        createdAt: AT + 6_000,
      },
      l.retained,
    );
    if (restore !== "recorded") throw new Error(`the fixture's restore was not recorded: ${restore}`);

    const journal = MaintenanceJournal.of(store.placements);
    const command = {
      leaseUuid: l.active,
      tenant: "fixture-tenant",
      backend: "docker-1",
      lifecycleId: OPS.active,
    };
    const restart = journal.admit({
      ...command,
      key: "restart-key-1",
      maintenanceId: OPS.restart,
      kind: "restart",
      payload: undefined,
      nowMs: AT + 7_000,
    });
    if (restart.kind !== "admitted") throw new Error(`restart not admitted: ${restart.kind}`);
    journal.accepted(l.active, OPS.restart);
    journal.settle(l.active, OPS.restart, "succeeded", { status: 202 }, AT + 8_000);
    const update = journal.admit({
      ...command,
      key: "update-key-1",
      maintenanceId: OPS.update,
      kind: "update",
      payload: Buffer.from('{"services":{"web":{"image":"docker.io/library/nginx:1.28"}}}'),
      nowMs: AT + 9_000,
    });
    if (update.kind !== "admitted") throw new Error(`update not admitted: ${update.kind}`);
    journal.accepted(l.active, OPS.update);
  } finally {
    store.close();
  }

  const payloads = PayloadStore.open(join(dir, "payloads.db"));
  try {
    for (const [role, bytes] of Object.entries(chain.payloads)) {
      await payloads.put(l[role as keyof typeof l], bytes, AT + 500);
    }
    // A completed update's manifest, promoted over the upload.
    await payloads.promote(
      l.active,
      Buffer.from('{"services":{"web":{"image":"docker.io/library/nginx:1.27.1"}}}'),
      AT + 600,
    );
  } finally {
    payloads.close();
  }

  const tokens = TokenTracker.open(join(dir, "tokens.db"));
  try {
    for (const t of TOKENS) await tokens.tryUse(t.key, t.expiresAt, AT);
  } finally {
    tokens.close();
  }
}
