import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { until } from "../../support/index.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { signedClient } from "../kit/signed-client.ts";
import { manifest, SECRET } from "./helpers.ts";
import { type MockProcess, spawnMock } from "./process.ts";

/**
 * The retention crash matrix on a real `fred backend mock` process: kill -9 while a
 * retaining close keeps the data, while a restore adopts it, while a restore's target
 * starts, and while the reaper destroys an expired copy; then restart on the same journal.
 * Afterwards each lease's data is either still retained or adopted by exactly one lease
 * (never both, never lost), and every callback arrives once.
 */
const SKU = "0190f3a2-7c1e-7000-8000-00000000f001";
const TENANT = "manifest1retentioncrash";
const PROVIDER = randomUUID();

describe("mock backend retention crash matrix (real processes, SIGKILL)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-retention-crash-"));
  const procs: MockProcess[] = [];
  let rx: Receiver;
  after(async () => {
    for (const p of procs) await p.kill();
    await rx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("leaves every lease's data retained or adopted by exactly one lease, callbacks once", async () => {
    rx = await startReceiver(SECRET);
    const dbPath = join(dir, "journal.db");
    const base = {
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_NAME: "mock-retention-crash",
      MOCK_BACKEND_STORAGE_ID: randomUUID(),
      MOCK_BACKEND_CALLBACK_SECRET: SECRET,
      MOCK_BACKEND_DB_PATH: dbPath,
      MOCK_BACKEND_RETAIN_ON_CLOSE: "1",
      MOCK_BACKEND_RETAINED_DISK_MB: "5",
      MOCK_BACKEND_SKUS: JSON.stringify({ [SKU]: { cpu_cores: 1, memory_mb: 256, disk_mb: 50 } }),
    };
    const [closing, s1, s2, reaped, t1, t2, t3] = Array.from({ length: 7 }, () => randomUUID()) as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const journal = () => new Database(dbPath, { readonly: true, fileMustExist: true });
    const read = <T>(sql: string, ...args: unknown[]): T | undefined => {
      const db = journal();
      try {
        return db.prepare(sql).get(...args) as T | undefined;
      } finally {
        db.close();
      }
    };
    const rowStatus = (lease: string) =>
      read<{ status: string }>("SELECT status FROM retentions WHERE lease_uuid = ?", lease)?.status;
    const phase = (lease: string) =>
      read<{ phase: string }>("SELECT phase FROM leases WHERE lease_uuid = ?", lease)?.phase;
    const outboxEmpty = () => read<{ n: number }>("SELECT count(*) AS n FROM outbox")?.n === 0;
    const once = (lease: string, status: string) =>
      rx.deliveries.filter((d) => d.body.lease_uuid === lease && d.body.status === status).length;

    const client = (p: MockProcess) => signedClient(p.ready.url, SECRET);
    const provision = async (p: MockProcess, lease: string) => {
      const op = randomUUID();
      const res = await client(p).post("/provision", {
        lease_uuid: lease,
        tenant: TENANT,
        provider_uuid: PROVIDER,
        items: [{ sku: SKU, quantity: 1, service_name: "web" }],
        callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
        payload: Buffer.from(manifest("web")).toString("base64"),
      });
      assert.equal(res.status, 202, res.text);
      await rx.waitFor((r) => r.effects.includes(`operation:${lease}:success`));
    };
    const close = async (p: MockProcess, lease: string) =>
      assert.equal((await client(p).post("/deprovision", { lease_uuid: lease })).status, 200);
    const restore = async (p: MockProcess, target: string, from: string) => {
      const op = randomUUID();
      const url = `${rx.url}/callbacks/provision?operation_id=${op}`;
      const res = await client(p).post("/restore", {
        lease_uuid: target,
        from_lease_uuid: from,
        tenant: TENANT,
        provider_uuid: PROVIDER,
        items: [{ sku: SKU, quantity: 1, service_name: "web" }],
        callback_url: url,
        lifecycle_callback_url: url.replace("operation_id", "lifecycle_id"),
      });
      assert.equal(res.status, 202, res.text);
    };
    const spawn = async (env: Record<string, string>) => {
      const p = await spawnMock({ ...base, ...env });
      procs.push(p);
      return p;
    };

    // 1. Kill while a retaining close keeps the data, while a restore adopts, while a restore's target starts.
    const first = await spawn({
      MOCK_BACKEND_HANG_RETENTION: `${closing},${t1}`,
      MOCK_BACKEND_HANG_LEASES: t2,
    });
    for (const lease of [closing, s1, s2, reaped]) await provision(first, lease);
    for (const lease of [s1, s2, reaped]) await close(first, lease);
    await rx.waitFor((r) =>
      [s1, s2, reaped].every((l) => r.effects.includes(`lifecycle:${l}:deprovisioned`)),
    );
    await close(first, closing); // its retain hangs: the row stays "closing"
    assert.equal(rowStatus(closing), "closing");
    await restore(first, t1, s1); // adoption hangs
    await restore(first, t2, s2); // adopted; the target's start hangs
    await until(
      () => phase(t1) === "started" && phase(t2) === "started",
      "both restores past their effect boundary",
    );
    assert.equal(rowStatus(s1), "restoring");
    assert.equal(rowStatus(s2), "restoring");
    await until(outboxEmpty, "every callback so far recorded as delivered");
    assert.equal((await first.kill()).code, null);

    // 2. Restart: the close finishes retained; both restores fail and hand the data back.
    const second = await spawn({});
    await rx.waitFor(
      (r) =>
        r.effects.includes(`lifecycle:${closing}:deprovisioned`) &&
        r.effects.includes(`operation:${t1}:failed`) &&
        r.effects.includes(`operation:${t2}:failed`),
    );
    const retainedCb = rx.deliveries.find(
      (d) => d.body.lease_uuid === closing && d.body.status === "deprovisioned",
    );
    assert.equal(retainedCb?.body.retained, true);
    assert.equal(rowStatus(closing), "active");
    for (const [target, source] of [
      [t1, s1],
      [t2, s2],
    ] as const) {
      assert.equal(rowStatus(source), "active", `${source} is retained again, not adopted`);
      const info = (await client(second).get(`/provisions/${target}`)).json as Record<string, unknown>;
      assert.equal(info.status, "failed");
      assert.equal(info.reason, "RestoreFailed");
    }
    // The handed-back data restores into exactly one new lease.
    await restore(second, t3, s1);
    await rx.waitFor((r) => r.effects.includes(`operation:${t3}:success`));
    assert.notEqual(rowStatus(s1), "active", "adopted: no longer restorable");
    await until(outboxEmpty, "callbacks recorded as delivered");
    assert.equal((await second.kill()).code, null);

    // 3. Kill while the reaper destroys expired copies.
    const aging = { MOCK_BACKEND_RETENTION_MAX_AGE: "1s", MOCK_BACKEND_RETENTION_REAP_INTERVAL: "100ms" };
    const third = await spawn({ ...aging, MOCK_BACKEND_HANG_RETENTION: reaped });
    await until(() => rowStatus(reaped) === "reaping", "the expired row marked for reaping");
    const listed = (await client(third).get("/retentions")).json as { retentions: { lease_uuid: string }[] };
    assert.ok(!listed.retentions.some((r) => r.lease_uuid === reaped), "a reaping row is not restorable");
    assert.equal((await third.kill()).code, null);

    // 4. Restart: the reaper finishes; nothing retained is left.
    const fourth = await spawn(aging);
    await until(() => rowStatus(reaped) === undefined, "the reaped row deleted after its copies");
    await until(
      () => read<{ n: number }>("SELECT count(*) AS n FROM retentions")?.n === 0,
      "every expired row reaped",
    );
    assert.equal((await fourth.stop()).code, 0);

    // Every callback once.
    for (const [lease, status] of [
      [closing, "deprovisioned"],
      [s1, "deprovisioned"],
      [s2, "deprovisioned"],
      [reaped, "deprovisioned"],
      [t1, "failed"],
      [t2, "failed"],
      [t3, "success"],
    ] as const) {
      assert.equal(once(lease, status), 1, `${status} of ${lease} delivered once`);
    }
  });
});
