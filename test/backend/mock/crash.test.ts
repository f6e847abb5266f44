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
import { SECRET, SKU } from "./helpers.ts";
import { type MockProcess, spawnMock } from "./process.ts";

/**
 * kill -9 of a real `fred backend mock` process at the three points that matter — after
 * an intent is started but before it settles, after settlement but before delivery, and
 * while a delivery is in flight — then a restart on the same journal. Every result must
 * arrive, in order per lease, and each effect must be applied once at the receiver.
 */
describe("mock backend crash recovery (real processes, SIGKILL)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-mock-crash-"));
  const procs: MockProcess[] = [];
  after(async () => {
    for (const p of procs) await p.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it("delivers every result once, in order, after kill -9 at each point", async () => {
    const rx = await startReceiver(SECRET);
    try {
      const dbPath = join(dir, "journal.db");
      const [l0, l1, l2, l3] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      const env = {
        MOCK_BACKEND_ADDR: "127.0.0.1:0",
        MOCK_BACKEND_NAME: "mock-crash",
        MOCK_BACKEND_STORAGE_ID: randomUUID(),
        MOCK_BACKEND_CALLBACK_SECRET: SECRET,
        MOCK_BACKEND_DB_PATH: dbPath,
      };
      const first = await spawnMock({ ...env, MOCK_BACKEND_HANG_LEASES: l1 as string });
      procs.push(first);
      const ops = new Map<string, string>();
      const provision = async (url: string, lease: string) => {
        const op = randomUUID();
        ops.set(lease, op);
        const res = await signedClient(url, SECRET).post("/provision", {
          lease_uuid: lease,
          tenant: "manifest1crash",
          provider_uuid: randomUUID(),
          items: [{ sku: SKU, quantity: 1 }],
          callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
        });
        assert.equal(res.status, 202, res.text);
      };
      const journal = new Database(dbPath, { readonly: true, fileMustExist: true });
      const phase = (lease: string) =>
        (
          journal.prepare("SELECT phase FROM leases WHERE lease_uuid = ?").get(lease) as
            | { phase: string }
            | undefined
        )?.phase;
      const outboxFor = (lease: string) =>
        (journal.prepare("SELECT count(*) AS n FROM outbox WHERE lease_uuid = ?").get(lease) as { n: number })
          .n;
      try {
        // Baseline: a normal provision is delivered.
        await provision(first.ready.url, l0 as string);
        await rx.waitFor((r) => r.effects.includes(`operation:${l0}:success`));

        // 1. Started but never settled: the substrate call hangs.
        await provision(first.ready.url, l1 as string);
        await until(() => phase(l1 as string) === "started", "L1 intent started");

        // 2. Settled, delivery refused: the row is committed and waits in the outbox.
        rx.setMode(503);
        await provision(first.ready.url, l2 as string);
        await until(() => rx.deliveries.some((d) => d.body.lease_uuid === l2), "a refused L2 delivery");
        assert.equal(outboxFor(l2 as string), 1);

        // 3. In flight: the receiver applies the effect but the reply never leaves.
        rx.setMode("hold");
        await provision(first.ready.url, l3 as string);
        await until(() => rx.effects.includes(`operation:${l3}:success`), "L3 applied at the receiver");
        assert.equal(outboxFor(l3 as string), 1, "the in-flight row is still durable");
      } finally {
        journal.close();
      }
      assert.equal((await first.kill()).code, null);
      rx.releaseHeld(503);
      rx.setMode(200);

      const second = await spawnMock(env);
      procs.push(second);
      assert.equal(second.ready.storage_id, env.MOCK_BACKEND_STORAGE_ID);
      await rx.waitFor(
        (r) =>
          r.effects.includes(`operation:${l1}:failed`) &&
          r.effects.includes(`operation:${l2}:success`) &&
          r.deliveries.filter((d) => d.body.lease_uuid === l3).length >= 2,
      );
      const c = signedClient(second.ready.url, SECRET);
      for (const lease of [l0, l1, l2, l3] as string[]) {
        assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
      }
      await rx.waitFor((r) =>
        [l0, l1, l2, l3].every((l) => r.effects.includes(`lifecycle:${l}:deprovisioned`)),
      );

      // Exactly the expected effects, once each, operation result before teardown per lease.
      const expected = [
        `operation:${l0}:success`,
        `operation:${l1}:failed`,
        `operation:${l2}:success`,
        `operation:${l3}:success`,
        ...[l0, l1, l2, l3].map((l) => `lifecycle:${l}:deprovisioned`),
      ];
      assert.deepEqual([...rx.effects].sort(), expected.sort());
      for (const lease of [l0, l1, l2, l3] as string[]) {
        const mine = rx.deliveries.filter((d) => d.body.lease_uuid === lease && d.signatureValid);
        const firstLifecycle = mine.findIndex((d) => d.route === "lifecycle");
        const lastOperation = mine.map((d) => d.route).lastIndexOf("operation");
        assert.ok(lastOperation < firstLifecycle, `operation result precedes teardown for ${lease}`);
        for (const d of mine) {
          if (d.route === "operation") assert.equal(d.callbackId, ops.get(lease));
          assert.equal(d.body.backend_storage_id, env.MOCK_BACKEND_STORAGE_ID);
        }
      }
      const stats = (await (await fetch(`${second.ready.url}/stats`)).json()) as {
        allocated_cpu_cores: number;
      };
      assert.equal(stats.allocated_cpu_cores, 0, "no capacity leaked");
      assert.equal((await second.stop()).code, 0);
    } finally {
      await rx.close();
    }
  });

  it("reports a ready lease whose workload vanished across a restart as a lifecycle failure", async () => {
    const rx = await startReceiver(SECRET);
    try {
      const dbPath = join(dir, "vanish.db");
      const env = {
        MOCK_BACKEND_ADDR: "127.0.0.1:0",
        MOCK_BACKEND_STORAGE_ID: randomUUID(),
        MOCK_BACKEND_CALLBACK_SECRET: SECRET,
        MOCK_BACKEND_DB_PATH: dbPath,
      };
      const first = await spawnMock(env);
      procs.push(first);
      const lease = randomUUID();
      const op = randomUUID();
      const res = await signedClient(first.ready.url, SECRET).post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1vanish",
        provider_uuid: randomUUID(),
        items: [{ sku: SKU, quantity: 1 }],
        callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
      });
      assert.equal(res.status, 202);
      await rx.waitFor((r) => r.effects.includes(`operation:${lease}:success`));
      assert.equal((await first.stop()).code, 0);
      // The fake substrate's records are gone, as after a reset of the reference mock.
      rmSync(`${dbPath}.substrate`, { force: true });
      const second = await spawnMock(env);
      procs.push(second);
      await rx.waitFor((r) => r.effects.includes(`lifecycle:${lease}:failed`));
      const d = rx.deliveries.find((x) => x.route === "lifecycle" && x.body.lease_uuid === lease);
      assert.equal(d?.callbackId, op);
      const status = await signedClient(second.ready.url, SECRET).get(`/provisions/${lease}`);
      assert.equal((status.json as { status: string }).status, "failed");
      assert.equal((await second.stop()).code, 0);
    } finally {
      await rx.close();
    }
  });

  it("refuses to start on a journal bound to another storage id (exit 1)", async () => {
    const dbPath = join(dir, "journal.db");
    await assert.rejects(
      spawnMock({
        MOCK_BACKEND_ADDR: "127.0.0.1:0",
        MOCK_BACKEND_STORAGE_ID: randomUUID(),
        MOCK_BACKEND_CALLBACK_SECRET: SECRET,
        MOCK_BACKEND_DB_PATH: dbPath,
      }),
      /exited with 1.*bound to storage id/s,
    );
  });
});
