import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { startReceiver } from "../kit/receiver.ts";
import { signedClient } from "../kit/signed-client.ts";
import { SECRET, SKU } from "./helpers.ts";
import { type MockProcess, mockEnv, spawnMock } from "./process.ts";

/**
 * POST /_mock/lose/{lease_uuid} on a real `fred backend mock` process: the workload
 * vanishes as on a crashed host, the lease is reported failed on its lifecycle URL at
 * once, and it may be provisioned again under a new operation (no tombstone).
 */
describe("mock backend failure injection: lose a workload (real process)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-mock-lose-"));
  let proc: MockProcess | undefined;
  after(async () => {
    await proc?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it("reports the lost lease failed, keeps it, and provisions it again under a new operation", async () => {
    const rx = await startReceiver(SECRET);
    try {
      proc = await spawnMock(mockEnv(SECRET, join(dir, "journal.db")));
      const c = signedClient(proc.ready.url, SECRET);
      const lease = randomUUID();
      const provision = async (op: string) => {
        const res = await c.post("/provision", {
          lease_uuid: lease,
          tenant: "manifest1lose",
          provider_uuid: "01234567-89ab-7def-8123-456789abcdef",
          items: [{ sku: SKU, quantity: 1 }],
          callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
        });
        assert.equal(res.status, 202, res.text);
      };
      const op1 = randomUUID();
      await provision(op1);
      await rx.waitFor((r) => r.effects.includes(`operation:${lease}:success`));

      // Refusals first: unsigned, malformed, nil, unknown lease.
      assert.equal((await c.post(`/_mock/lose/${lease}`, undefined, { tamper: "missing" })).status, 401);
      assert.equal((await c.post("/_mock/lose/nope", undefined)).status, 400);
      assert.equal((await c.post("/_mock/lose/00000000-0000-0000-0000-000000000000", undefined)).status, 400);
      assert.equal((await c.post(`/_mock/lose/${randomUUID()}`, undefined)).status, 404);
      assert.equal((await c.get(`/info/${lease}`)).status, 200, "nothing was lost by a refusal");

      const lost = await c.post(`/_mock/lose/${lease}`, undefined);
      assert.equal(lost.status, 200, lost.text);
      // The recovery pass ran before the answer: the failure is recorded already.
      const status = (await c.get(`/provisions/${lease}`)).json as Record<string, unknown>;
      assert.equal(status.status, "failed");
      assert.equal(status.reason, "Unknown");
      assert.deepEqual(status.terminal_budget, { verdict: "retry", consecutive_failures: 0 });
      await rx.waitFor((r) => r.effects.includes(`lifecycle:${lease}:failed`));
      const d = rx.deliveries.find((x) => x.route === "lifecycle" && x.body.lease_uuid === lease);
      assert.equal(d?.callbackId, op1);
      assert.equal(d?.signatureValid, true);
      assert.equal((await c.get(`/info/${lease}`)).status, 404);
      assert.equal((await c.post(`/_mock/lose/${lease}`, undefined)).status, 404, "nothing left to lose");
      assert.ok(!rx.effects.includes(`lifecycle:${lease}:deprovisioned`), "not a deprovision");

      // No tombstone: a new operation provisions the lease again, as release 2.
      const op2 = randomUUID();
      await provision(op2);
      await rx.waitFor((r) => r.deliveries.some((x) => x.callbackId === op2 && x.body.status === "success"));
      assert.equal(((await c.get(`/provisions/${lease}`)).json as { status: string }).status, "ready");
      const releases = (await c.get(`/releases/${lease}`)).json as { version: number; status: string }[];
      assert.deepEqual(
        releases.map((r) => [r.version, r.status]),
        [
          [1, "superseded"],
          [2, "active"],
        ],
      );
    } finally {
      await rx.close();
    }
  });
});
