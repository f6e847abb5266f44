import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, beforeEach, describe, it } from "node:test";
import { setImmediate } from "node:timers/promises";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import {
  type Admission,
  DEFAULT_LIMITS,
  formatAdmittedAt,
  instantNs,
  MaintenanceJournal,
  nextAdmittedAt,
  PHASE_ALLOWANCE,
  sameCommand,
  sameInstant,
} from "../../../src/provider/maintenance/journal.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";

/** The maintenance journal on a real placement store file. */
const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";
const SID = "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f";
const LEASE_1 = "0190f3a2-7c1e-7000-8000-000000000001";
const LEASE_2 = "0190f3a2-7c1e-7000-8000-000000000002";
const LEASE_3 = "0190f3a2-7c1e-7000-8000-000000000003";
const LIFECYCLE = "11111111-1111-4111-8111-111111111111";
const T0 = 1_700_000_000_000;

const root = mkdtempSync(join(tmpdir(), "fred-maint-journal-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
let store: PlacementStore;
let journal: MaintenanceJournal;
beforeEach(() => {
  store?.close();
  store = PlacementStore.create(
    join(root, `p${++n}.db`),
    PROVIDER,
    [{ name: "one", storageId: SID, baseline: { provisions: 0, retentions: 0 } }],
    T0,
  );
  journal = MaintenanceJournal.of(store.placements);
});
after(() => store?.close());

function admission(over: Partial<Admission> = {}): Admission {
  const key = over.key ?? newUuidV4();
  return {
    leaseUuid: LEASE_1,
    key,
    maintenanceId: key,
    tenant: "manifest1tenant",
    kind: "restart",
    payload: undefined,
    backend: "one",
    lifecycleId: LIFECYCLE,
    nowMs: T0,
    ...over,
  };
}

function admitted(over: Partial<Admission> = {}) {
  const r = journal.admit(admission(over));
  assert.equal(r.kind, "admitted");
  return (r as { command: import("../../../src/provider/maintenance/journal.ts").Command }).command;
}

describe("maintenance journal", () => {
  it("admits a command durably; the same key finds it again, also after reopening", async () => {
    const c = admitted({ kind: "update", payload: Buffer.from("manifest") });
    assert.equal(c.phase, "admitted");
    assert.equal(c.admittedAtUs, T0 * 1000);
    await journal.durable();
    const path = store.placements.db.name;
    store.close();
    store = PlacementStore.open(path, PROVIDER);
    journal = MaintenanceJournal.of(store.placements);
    const again = journal.admit(admission({ key: c.key, kind: "update", payload: Buffer.from("manifest") }));
    assert.equal(again.kind, "existing");
    if (again.kind !== "existing") return;
    assert.deepEqual(again.command.payload, Buffer.from("manifest"));
    assert.ok(sameCommand(again.command, "update", Buffer.from("manifest")));
    assert.ok(!sameCommand(again.command, "update", Buffer.from("other")));
    assert.ok(!sameCommand(again.command, "restart", undefined));
  });

  it("refuses another key while the lease has an unsettled command; settling frees it", () => {
    const c = admitted();
    assert.equal(journal.admit(admission()).kind, "busy");
    assert.ok(journal.accepted(LEASE_1, c.maintenanceId));
    assert.equal(journal.admit(admission()).kind, "busy");
    assert.ok(journal.settle(LEASE_1, c.maintenanceId, "succeeded", { status: 202 }, T0));
    assert.equal(journal.pending(LEASE_1), undefined);
    assert.equal(journal.admit(admission()).kind, "admitted");
  });

  it("newest and pendingKind follow every write at once, and another connection's commit from the next turn", async () => {
    assert.equal(journal.pendingKind(LEASE_1), undefined);
    assert.equal(journal.pendingKind(LEASE_1), undefined, "asked twice: answered from memory");
    const r = journal.admit(admission({ kind: "update", payload: Buffer.from("{}") }));
    assert.equal(r.kind, "admitted");
    if (r.kind !== "admitted") return;
    assert.equal(journal.pendingKind(LEASE_1), "update", "admitted");
    const id = r.command.maintenanceId;
    assert.deepEqual(journal.newest(LEASE_1), { maintenanceId: id, kind: "update", phase: "admitted" });
    assert.ok(journal.accepted(LEASE_1, id));
    assert.equal(journal.pendingKind(LEASE_1), "update", "accepted");
    assert.equal(journal.newest(LEASE_1)?.phase, "accepted");
    assert.ok(journal.settle(LEASE_1, id, "succeeded", { status: 202 }, T0));
    assert.equal(journal.pendingKind(LEASE_1), undefined, "settled");
    assert.deepEqual(journal.newest(LEASE_1), { maintenanceId: id, kind: "update", phase: "settled" });
    // A rolled-back admission leaves nothing behind in memory.
    assert.throws(() =>
      store.placements.batch(() => {
        journal.admit(admission({ leaseUuid: LEASE_2 }));
        assert.equal(journal.pendingKind(LEASE_2), "restart", "inside the transaction");
        throw new Error("roll back");
      }),
    );
    assert.equal(journal.pendingKind(LEASE_2), undefined, "rolled back");
    // Another connection on the same file (a tool, a second process), once this turn's
    // shared transaction has committed.
    await journal.durable();
    const other = PlacementStore.open(join(root, `p${n}.db`), PROVIDER);
    try {
      assert.equal(
        MaintenanceJournal.of(other.placements).admit(admission({ leaseUuid: LEASE_3 })).kind,
        "admitted",
      );
    } finally {
      other.close();
    }
    await setImmediate();
    assert.equal(journal.pendingKind(LEASE_3), "restart", "the other connection's admission");
  });

  it("stamps a lease's commands strictly increasing, even when the clock stands still or goes back", () => {
    const a = admitted({ nowMs: T0 });
    journal.settle(LEASE_1, a.maintenanceId, "succeeded", { status: 202 }, T0);
    const b = admitted({ nowMs: T0 - 5_000 });
    journal.settle(LEASE_1, b.maintenanceId, "succeeded", { status: 202 }, T0);
    const c = admitted({ nowMs: T0 });
    assert.ok(a.admittedAtUs < b.admittedAtUs && b.admittedAtUs < c.admittedAtUs);
    assert.equal(b.admittedAtUs, a.admittedAtUs + 1);
  });

  it("settlement keeps the receipt and its answer but drops the pending manifest", () => {
    const c = admitted({ kind: "update", payload: Buffer.from("m") });
    assert.ok(journal.confirmed(LEASE_1, c.maintenanceId));
    assert.equal(journal.byKey(LEASE_1, c.key)?.phase, "confirmed");
    const answer = { status: 409, error: "the update failed" };
    assert.ok(journal.settle(LEASE_1, c.maintenanceId, "failed", answer, T0));
    assert.ok(!journal.settle(LEASE_1, c.maintenanceId, "succeeded", { status: 202 }, T0), "settles once");
    const r = journal.byKey(LEASE_1, c.key)!;
    assert.equal(r.phase, "settled");
    assert.equal(r.outcome, "failed");
    assert.deepEqual(r.answer, answer);
    assert.equal(r.payload, undefined);
    assert.ok(sameCommand(r, "update", Buffer.from("m")), "a replay is still compared with the same bytes");
  });

  it("keeps the lease's newest receipts only (oldest settled evicted first)", () => {
    const limits = { ...DEFAULT_LIMITS, receipts: 3 };
    const keys: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = journal.admit(admission({ nowMs: T0 + i }), limits);
      assert.equal(r.kind, "admitted");
      if (r.kind !== "admitted") return;
      keys.push(r.command.key);
      journal.settle(LEASE_1, r.command.maintenanceId, "succeeded", { status: 202 }, T0);
    }
    assert.deepEqual(
      keys.map((k) => journal.byKey(LEASE_1, k) !== undefined),
      [false, false, true, true, true],
    );
  });

  it("budget: the reserve is left for a tenant without pending work (429), the rest is global (503)", () => {
    const limits = { ...DEFAULT_LIMITS, commands: 3, reserveCommands: 1 };
    admitted({ leaseUuid: LEASE_1, tenant: "a" });
    assert.equal(journal.admit(admission({ leaseUuid: LEASE_2, tenant: "a" }), limits).kind, "admitted");
    // Tenant a has pending work: it must leave one command for somebody else.
    assert.equal(journal.admit(admission({ leaseUuid: LEASE_3, tenant: "a" }), limits).kind, "reserved");
    assert.equal(journal.admit(admission({ leaseUuid: LEASE_3, tenant: "b" }), limits).kind, "admitted");
    // Now the pool is exhausted for everybody.
    const full = journal.admit(
      admission({ leaseUuid: "0190f3a2-7c1e-7000-8000-000000000004", tenant: "c" }),
      limits,
    );
    assert.equal(full.kind, "full");
    assert.equal(journal.totals().commands, 3);
  });

  it("budget: content counts key, payload and the phase allowance; the byte reserve is 2 MiB", () => {
    const key = newUuidV4();
    const payload = Buffer.alloc(1000);
    admitted({ key, kind: "update", payload, tenant: "a" });
    assert.equal(journal.totals().bytes, key.length + 1000 + PHASE_ALLOWANCE);
    const limits = { ...DEFAULT_LIMITS, bytes: 3 * 1024 * 1024 };
    const big = Buffer.alloc(1024 * 1024);
    const r = journal.admit(
      admission({ leaseUuid: LEASE_2, kind: "update", payload: big, tenant: "a" }),
      limits,
    );
    assert.equal(r.kind, "reserved");
    const s = journal.admit(
      admission({ leaseUuid: LEASE_2, kind: "update", payload: big, tenant: "b" }),
      limits,
    );
    assert.equal(s.kind, "admitted");
  });

  it("forget drops receipts of a lease but never an unsettled command", () => {
    const a = admitted();
    journal.settle(LEASE_1, a.maintenanceId, "succeeded", { status: 202 }, T0);
    admitted();
    assert.equal(journal.forget(LEASE_1), 1);
    assert.ok(journal.pending(LEASE_1) !== undefined);
  });
});

describe("admitted_at stamps", () => {
  it("formats microseconds as RFC 3339 UTC and compares echoes as instants", () => {
    const us = Date.UTC(2024, 0, 16, 14, 0, 0) * 1000 + 1;
    assert.equal(formatAdmittedAt(us), "2024-01-16T14:00:00.000001Z");
    assert.ok(sameInstant(us, "2024-01-16T14:00:00.000001Z"));
    assert.ok(sameInstant(us, "2024-01-16T14:00:00.000001000Z"));
    assert.ok(!sameInstant(us, "2024-01-16T14:00:00.000002Z"));
    assert.ok(!sameInstant(us, "2024-01-16T14:00:00.000001+00:00"));
    assert.equal(instantNs("garbage"), undefined);
    assert.ok(sameInstant(Date.UTC(2024, 0, 16) * 1000, "2024-01-16T00:00:00Z"));
  });

  it("the next stamp is now, or one microsecond after the newest", () => {
    assert.equal(nextAdmittedAt(5, undefined), 5000);
    assert.equal(nextAdmittedAt(5, 4999), 5000);
    assert.equal(nextAdmittedAt(5, 5000), 5001);
    assert.equal(nextAdmittedAt(4, 9000), 9001);
  });
});
