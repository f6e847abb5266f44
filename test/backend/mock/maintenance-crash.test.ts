import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { until } from "../../support/index.ts";
import { startReceiver } from "../kit/receiver.ts";
import { signedClient } from "../kit/signed-client.ts";
import { manifest, SECRET, SKU } from "./helpers.ts";
import { type MockProcess, spawnMock } from "./process.ts";

/**
 * kill -9 of a real `fred backend mock` while a restart and an update are journaled and
 * their substrate calls are under way (MOCK_BACKEND_HANG_LEASES holds them), then a
 * restart on the same journal without the hang: recovery calls the substrate again, and
 * each command ends with exactly one completion carrying its maintenance_id and stamp.
 */
type Body = Record<string, unknown>;

describe("maintenance crash recovery (real processes, SIGKILL)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-mock-maint-"));
  const procs: MockProcess[] = [];
  after(async () => {
    for (const p of procs) await p.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it("resumes a started restart and update after kill -9; one completion each", async () => {
    const rx = await startReceiver(SECRET);
    try {
      const dbPath = join(dir, "journal.db");
      const env = {
        MOCK_BACKEND_ADDR: "127.0.0.1:0",
        MOCK_BACKEND_NAME: "mock-maint-crash",
        MOCK_BACKEND_STORAGE_ID: randomUUID(),
        MOCK_BACKEND_CALLBACK_SECRET: SECRET,
        MOCK_BACKEND_DB_PATH: dbPath,
      };
      const [restarted, updated] = [randomUUID(), randomUUID()];
      const lifecycle = new Map<string, string>();
      const first = await spawnMock(env);
      procs.push(first);
      let c = signedClient(first.ready.url, SECRET);
      for (const lease of [restarted, updated]) {
        const op = randomUUID();
        lifecycle.set(lease, `${rx.url}/callbacks/provision?lifecycle_id=${op}`);
        const res = await c.post("/provision", {
          lease_uuid: lease,
          tenant: "manifest1maintcrash",
          provider_uuid: randomUUID(),
          items: [{ sku: SKU, quantity: 1, service_name: "web" }],
          callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
          payload: Buffer.from(manifest("web")).toString("base64"),
        });
        assert.equal(res.status, 202, res.text);
      }
      await rx.waitFor(
        (r) =>
          r.effects.includes(`operation:${restarted}:success`) &&
          r.effects.includes(`operation:${updated}:success`),
      );
      await first.kill();

      const second = await spawnMock({ ...env, MOCK_BACKEND_HANG_LEASES: `${restarted},${updated}` });
      procs.push(second);
      c = signedClient(second.ready.url, SECRET);
      const [r, u] = [randomUUID(), randomUUID()];
      const [tr, tu] = ["2026-12-01T10:00:00.000001Z", "2026-12-01T10:00:00.000002Z"];
      const restart = await c.post("/restart", {
        lease_uuid: restarted,
        maintenance_id: r,
        callback_url: lifecycle.get(restarted),
        admitted_at: tr,
      });
      assert.equal(restart.status, 202, restart.text);
      const update = await c.post("/update", {
        lease_uuid: updated,
        maintenance_id: u,
        callback_url: lifecycle.get(updated),
        payload: Buffer.from(manifest("web", "docker.io/library/nginx:1.27")).toString("base64"),
        admitted_at: tu,
      });
      assert.equal(update.status, 202, update.text);
      assert.equal(((await c.get(`/provisions/${restarted}`)).json as Body).status, "restarting");
      assert.equal(((await c.get(`/provisions/${updated}`)).json as Body).status, "updating");
      const journal = new Database(dbPath, { readonly: true, fileMustExist: true });
      try {
        const phase = (id: string) =>
          (
            journal.prepare("SELECT phase FROM maintenance WHERE maintenance_id = ?").get(id) as
              | { phase: string }
              | undefined
          )?.phase;
        await until(() => phase(r) === "started" && phase(u) === "started", "both commands started");
      } finally {
        journal.close();
      }
      await second.kill();
      assert.equal(rx.deliveries.filter((d) => d.body.maintenance_id !== undefined).length, 0);

      const third = await spawnMock(env);
      procs.push(third);
      c = signedClient(third.ready.url, SECRET);
      const of = (id: string) => rx.deliveries.filter((d) => d.body.maintenance_id === id);
      await rx.waitFor(() => of(r).length > 0 && of(u).length > 0);
      for (const [id, t, lease] of [
        [r, tr, restarted],
        [u, tu, updated],
      ] as const) {
        const [done, ...more] = of(id);
        assert.equal(more.length, 0, `one completion for ${id}`);
        assert.equal(done?.route, "lifecycle");
        assert.equal(done?.uri, (lifecycle.get(lease) as string).slice(rx.url.length));
        assert.equal(done?.body.status, "success");
        assert.equal(done?.body.maintenance_admitted_at, t);
        assert.ok(done?.signatureValid);
        assert.equal(((await c.get(`/provisions/${lease}`)).json as Body).status, "ready");
      }
      const releases = (await c.get(`/releases/${updated}`)).json as Body[];
      assert.deepEqual(
        releases.map((x) => [x.version, x.status, x.image]),
        [
          [1, "superseded", "docker.io/library/nginx:1.25"],
          [2, "active", "docker.io/library/nginx:1.27"],
        ],
      );
      // The replayed command after recovery: the stored answer, no second completion.
      const replay = await c.post("/restart", {
        lease_uuid: restarted,
        maintenance_id: r,
        callback_url: lifecycle.get(restarted),
        admitted_at: tr,
      });
      assert.deepEqual([replay.status, replay.json], [202, { status: "restarting" }]);
      assert.equal(of(r).length, 1);
      assert.equal((await third.stop()).code, 0);
    } finally {
      await rx.close();
    }
  });
});
