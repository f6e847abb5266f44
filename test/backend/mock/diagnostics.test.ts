import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { startReceiver } from "../kit/receiver.ts";
import { signedClient } from "../kit/signed-client.ts";
import { SECRET, SKU } from "./helpers.ts";
import { type MockProcess, spawnMock } from "./process.ts";

/**
 * `fred backend mock` as a real process: a failed lease's diagnostics (reason, curated
 * message, captured logs) are served after the close removed its workload, and they
 * survive a kill -9 and a restart on the same journal file.
 */
describe("mock backend: persisted failure diagnostics (real process)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-mock-diag-"));
  const procs: MockProcess[] = [];
  after(async () => {
    for (const p of procs) await p.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the last failure and its logs after the close, across a restart", async () => {
    const rx = await startReceiver(SECRET);
    try {
      const lease = randomUUID();
      const env = {
        MOCK_BACKEND_ADDR: "127.0.0.1:0",
        MOCK_BACKEND_NAME: "mock-diag",
        MOCK_BACKEND_STORAGE_ID: randomUUID(),
        MOCK_BACKEND_CALLBACK_SECRET: SECRET,
        MOCK_BACKEND_DB_PATH: join(dir, "journal.db"),
        MOCK_BACKEND_FAIL_LEASES: lease,
        MOCK_BACKEND_DIAGNOSTICS_MAX_AGE: "24h",
      };
      const first = await spawnMock(env);
      procs.push(first);
      const c = signedClient(first.ready.url, SECRET);
      const op = randomUUID();
      const res = await c.post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1diagproc",
        provider_uuid: randomUUID(),
        items: [{ sku: SKU, quantity: 1, service_name: "web" }],
        callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
      });
      assert.equal(res.status, 202, res.text);
      await rx.waitFor((r) => r.effects.includes(`operation:${lease}:failed`));
      assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
      await rx.waitFor((r) => r.effects.includes(`lifecycle:${lease}:deprovisioned`));

      const expected = {
        lease_uuid: lease,
        tenant: "manifest1diagproc",
        status: "failed",
        fail_count: 1,
        reason: "ContainerExited",
        message: "workload exited during startup",
      };
      const served = async (url: string) => {
        const client = signedClient(url, SECRET);
        const p = await client.get(`/provisions/${lease}`);
        assert.equal(p.status, 200, p.text);
        const body = p.json as Record<string, unknown>;
        for (const [k, v] of Object.entries(expected)) assert.equal(body[k], v, k);
        assert.equal(typeof body.created_at, "string");
        const logs = await client.get(`/logs/${lease}`);
        assert.equal(logs.status, 200, logs.text);
        assert.deepEqual(logs.json, { "web/0": "mock web/0 started\nstate failed\n" });
      };
      await served(first.ready.url);

      await first.kill();
      const second = await spawnMock(env);
      procs.push(second);
      await served(second.ready.url);
    } finally {
      await rx.close();
    }
  });
});
