import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { Registry } from "prom-client";
import { ManualClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { createLogger } from "../../../src/log.ts";
import { PayloadStore, PlacementStore, SnapshotSchedule } from "../../../src/provider/store/index.ts";
import { backupBeside, snapshotSets, takeSnapshot } from "../../../src/provider/store/snapshot.ts";

/** Online snapshots of real SQLite stores while they are being written. */
const dir = mkdtempSync(join(tmpdir(), "fred-snapshot-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";
const SID = "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f";
let n = 0;

function freshStores() {
  const live = join(dir, `live-${++n}`);
  mkdirSync(live);
  const placement = PlacementStore.create(
    join(live, "placements.db"),
    PROVIDER,
    [{ name: "b1", storageId: SID, baseline: { provisions: 0, retentions: 0 } }],
    1,
  );
  const payload = PayloadStore.open(join(live, "payloads.db"));
  return { placement, payload, dir: live };
}

function leaseUuid(i: number): string {
  return `0190f3a2-7c1e-7000-8000-${i.toString(16).padStart(12, "0")}`;
}

describe("online snapshots (SQLite backup API)", () => {
  it("a set taken under write load opens, is consistent, and is marked as a copy", async () => {
    const { placement, payload } = freshStores();
    let written = 0;
    let stop = false;
    // A writer that commits a batch on every turn of the event loop while the backup runs.
    const writer = (async () => {
      while (!stop) {
        const batch = Array.from({ length: 50 }, () => {
          const i = ++written;
          return {
            leaseUuid: leaseUuid(i),
            backend: "b1",
            operationId: randomUUID(),
            kind: "provision" as const,
            createdAt: i,
          };
        });
        placement.placements.recordAttempts(batch);
        await new Promise((r) => setImmediate(r));
      }
    })();
    await new Promise((r) => setImmediate(r));
    const snaps = join(dir, "snaps");
    const set = await takeSnapshot(snaps, { placement, payload }, Date.UTC(2026, 11, 1, 12), 2);
    stop = true;
    await writer;
    assert.ok(written > 0);
    assert.equal(statSync(set.files.placement).mode & 0o777, 0o600);
    assert.equal(statSync(set.files.payload!).mode & 0o777, 0o600);
    const copy = PlacementStore.openCopy(set.files.placement);
    try {
      assert.equal(copy.providerUuid, PROVIDER);
      assert.equal(copy.copies.takenAt(), Date.UTC(2026, 11, 1, 12));
      const attempts = copy.placements.unresolvedAttempts();
      // A transaction-consistent state: whole batches only, in commit order.
      assert.equal(attempts.length % 50, 0);
      assert.ok(attempts.length <= written);
      assert.deepEqual(
        attempts.map((a) => a.leaseUuid),
        Array.from({ length: attempts.length }, (_, i) => leaseUuid(i + 1)),
      );
      assert.equal(copy.database.db.pragma("integrity_check", { simple: true }), "ok");
    } finally {
      copy.close();
    }
    PayloadStore.open(set.files.payload!, { readonly: true }).close();
    placement.close();
    payload.close();
  });

  it("keeps placement_snapshot_retain complete sets and leaves no partial one", async () => {
    const { placement, payload } = freshStores();
    const snaps = join(dir, "retain");
    for (let i = 0; i < 4; i++) await takeSnapshot(snaps, { placement, payload }, Date.UTC(2026, 0, 1, i), 2);
    assert.deepEqual(snapshotSets(snaps), ["20260101T020000000Z", "20260101T030000000Z"]);
    assert.deepEqual(readdirSync(snaps).sort(), ["20260101T020000000Z", "20260101T030000000Z"]);
    placement.close();
    payload.close();
  });

  it("a restored copy refuses a read-write open until attested; attesting clears the baselines", async () => {
    const { placement, dir: live } = freshStores();
    const backup = await backupBeside(placement, Date.UTC(2026, 11, 1));
    assert.equal(statSync(backup).mode & 0o777, 0o600);
    assert.ok(backup.startsWith(join(live, "placements.db.backup-")));
    placement.close();
    assert.throws(
      () => PlacementStore.open(backup, PROVIDER),
      (e) => isFredError(e, "ERR_PLACEMENT_RESTORED") && /attest it first/.test(e.message),
    );
    PlacementStore.open(backup, PROVIDER, { readonly: true }).close();
    const restored = PlacementStore.open(backup, PROVIDER, { restoredCopy: "allow" });
    try {
      assert.equal(restored.fleet.baselineMatches(["b1"]), true);
      restored.copies.attest(Date.UTC(2026, 11, 2));
      assert.equal(restored.copies.takenAt(), undefined);
      assert.equal(restored.fleet.baselineMatches(["b1"]), false);
    } finally {
      restored.close();
    }
    PlacementStore.open(backup, PROVIDER).close();
  });

  it("providerd's schedule writes a set every interval and reports the last success", async () => {
    const { placement, payload } = freshStores();
    const clock = new ManualClock(Date.UTC(2026, 11, 1, 10));
    const registry = new Registry();
    const snaps = join(dir, "scheduled");
    const schedule = new SnapshotSchedule({
      dir: snaps,
      intervalMs: 5 * 60_000,
      retain: 2,
      sources: { placement, payload },
      clock,
      logger: createLogger("test", "error"),
      registry,
    });
    schedule.start();
    clock.advance(5 * 60_000);
    // stop() waits for the run the timer started.
    await schedule.stop();
    assert.deepEqual(snapshotSets(snaps), ["20261201T100500000Z"]);
    const metric = await registry.getSingleMetricAsString(
      "fred_placement_snapshot_last_success_timestamp_seconds",
    );
    assert.match(
      metric,
      new RegExp(
        `\\n?fred_placement_snapshot_last_success_timestamp_seconds ${Date.UTC(2026, 11, 1, 10, 5) / 1000}`,
      ),
    );
    placement.close();
    payload.close();
  });
});
