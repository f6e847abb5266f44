import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { setImmediate } from "node:timers/promises";
import { type Attempt, PayloadStore, PlacementStore } from "../../../src/provider/store/index.ts";

// hasAttempt and PayloadStore.has answer from memory between writes: every write must be
// seen by the very next read, rolled-back writes never, and a read-only reader beside the
// writer must see the writer's rows (it keeps no memory).
const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";
const SID = "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const LEASE_2 = "0190f3a2-7c1e-7000-8000-000000000002";
const OP_1 = "11111111-1111-4111-8111-111111111111";
const OP_2 = "22222222-2222-4222-8222-222222222222";
const T0 = 1_700_000_000_000;

const root = mkdtempSync(join(tmpdir(), "fred-read-memo-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

function placementStore(): { store: PlacementStore; path: string } {
  const path = join(root, `p${++n}.db`);
  const store = PlacementStore.create(
    path,
    PROVIDER,
    [{ name: "one", storageId: SID, baseline: { provisions: 0, retentions: 0 } }],
    T0,
  );
  return { store, path };
}

const attempt = (lease: string, op: string): Attempt => ({
  leaseUuid: lease,
  backend: "one",
  operationId: op,
  kind: "provision",
  createdAt: T0 + 1,
});

describe("hasAttempt between writes", () => {
  it("sees every attempt write at once: record, settle, refuse, retire, inventory", () => {
    const { store } = placementStore();
    using _ = store;
    assert.equal(store.placements.hasAttempt(LEASE), false);
    assert.equal(store.placements.hasAttempt(LEASE), false, "asked twice, still none");
    store.placements.recordAttempt(attempt(LEASE, OP_1));
    assert.equal(store.placements.hasAttempt(LEASE), true, "recorded");
    assert.equal(store.placements.settleOperation(LEASE, OP_1, "failed", T0 + 2).kind, "settled");
    assert.equal(store.placements.hasAttempt(LEASE), false, "settled");
    store.placements.recordAttempt(attempt(LEASE, OP_2));
    assert.equal(store.placements.hasAttempt(LEASE), true);
    assert.notEqual(store.placements.clearRefusedAttempt(LEASE, OP_2), undefined);
    assert.equal(store.placements.hasAttempt(LEASE), false, "refused");
    store.placements.recordAttempts([attempt(LEASE, OP_1), attempt(LEASE_2, OP_2)]);
    assert.equal(store.placements.hasAttempt(LEASE_2), true);
    assert.equal(store.placements.retireAttempt(LEASE_2, "one"), true);
    assert.equal(store.placements.hasAttempt(LEASE_2), false, "retired");
    assert.equal(store.placements.hasAttempt(LEASE), true);
    store.placements.applyPositiveInventory("one", [LEASE], T0 + 3);
    assert.equal(store.placements.hasAttempt(LEASE), false, "confirmed by the inventory");
  });

  it("forgets nothing wrongly when a batch rolls back", () => {
    const { store } = placementStore();
    using _ = store;
    assert.equal(store.placements.hasAttempt(LEASE), false);
    assert.throws(() =>
      store.placements.batch(() => {
        store.placements.recordAttempt(attempt(LEASE, OP_1));
        assert.equal(store.placements.hasAttempt(LEASE), true, "inside the batch the row is there");
        throw new Error("roll back");
      }),
    );
    assert.equal(store.placements.hasAttempt(LEASE), false, "rolled back: no attempt");
    store.placements.recordAttempt(attempt(LEASE, OP_1));
    assert.equal(store.placements.hasAttempt(LEASE), true);
    assert.throws(() =>
      store.placements.batch(() => {
        store.placements.settleOperation(LEASE, OP_1, "failed", T0 + 2);
        assert.equal(store.placements.hasAttempt(LEASE), false);
        throw new Error("roll back");
      }),
    );
    assert.equal(store.placements.hasAttempt(LEASE), true, "rolled back: the attempt is still there");
  });

  it("a read-only reader beside the writer sees its writes once they commit", async () => {
    const { store, path } = placementStore();
    using _ = store;
    using reader = PlacementStore.open(path, PROVIDER, { readonly: true });
    assert.equal(reader.placements.hasAttempt(LEASE), false);
    store.placements.recordAttempt(attempt(LEASE, OP_1));
    // The writer's turn commits its writes together (group commit); durable() commits it now.
    await store.placements.durable();
    assert.equal(reader.placements.hasAttempt(LEASE), true);
    store.placements.settleOperation(LEASE, OP_1, "failed", T0 + 2);
    await store.placements.durable();
    assert.equal(reader.placements.hasAttempt(LEASE), false);
  });
});

describe("PayloadStore.has between writes", () => {
  it("sees put, delete and promote at once, and a refused put changes nothing", async () => {
    const path = join(root, `q${++n}.db`);
    using store = PayloadStore.open(path);
    using reader = PayloadStore.open(path, { readonly: true });
    assert.equal(await store.has(LEASE), false);
    await store.put(LEASE, Buffer.from("a"), T0);
    assert.equal(await store.has(LEASE), true, "stored");
    assert.equal(await reader.has(LEASE), true, "the read-only reader sees it too");
    await assert.rejects(store.put(LEASE, Buffer.from("b"), T0), /ERR_PAYLOAD_CONFLICT|different payload/);
    assert.equal(await store.has(LEASE), true, "a refused put leaves the payload");
    assert.equal(await store.delete(LEASE), true);
    assert.equal(await store.has(LEASE), false, "deleted");
    assert.equal(await reader.has(LEASE), false);
    await store.promote(LEASE, Buffer.from("c"), T0 + 1);
    assert.equal(await store.has(LEASE), true, "promoted");
    assert.equal(await store.has(LEASE_2), false);
  });

  it("sees a payload another connection wrote to the same file from the next event-loop turn", async () => {
    const path = join(root, `q${++n}.db`);
    using store = PayloadStore.open(path);
    assert.equal(await store.has(LEASE), false);
    assert.equal(await store.has(LEASE), false, "asked twice: answered from memory");
    {
      using other = PayloadStore.open(path); // a second writer (a tool or a test) on the file
      await other.put(LEASE, Buffer.from("a"), T0);
    }
    // The memo checks SQLite's data_version once per turn: the commit shows on the next one.
    await setImmediate();
    assert.equal(await store.has(LEASE), true, "the other connection's commit is seen on the next turn");
  });
});
