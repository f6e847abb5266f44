import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, it } from "node:test";
import { type AdmitInput, Journal } from "../../../../src/backend/kit/journal/journal.ts";
import { RECEIPT_WINDOW } from "../../../../src/backend/kit/maintenance/store.ts";
import {
  type MaintenanceRequest,
  restartRequestSchema,
} from "../../../../src/core/backend-contract/index.ts";
import { stamp } from "./harness.ts";

/**
 * The maintenance store on a real (in-memory) journal: the receipt window, the mark that
 * outlives it, compare-and-swap on the lease head, and the completion row's fields.
 */
describe("maintenance store", () => {
  const j = new Journal({
    path: ":memory:",
    mode: "bind-or-verify",
    storageId: randomUUID(),
    backendName: "b",
  });
  after(() => j.close());
  const ready = (lease: string) => {
    const op = randomUUID();
    const input: AdmitInput = {
      leaseUuid: lease,
      tenant: "t",
      providerUuid: randomUUID(),
      operationId: op,
      callbackUrl: `http://h/cb?operation_id=${op}`,
      lifecycleUrl: `http://h/cb?lifecycle_id=${op}`,
      items: [{ sku: randomUUID(), quantity: 1 }],
      instances: [],
      payload: undefined,
      payloadHash: undefined,
      image: "",
      requestDigest: "digest",
      nowMs: 1,
    };
    const admitted = j.admitOperation(input);
    const started = j.markStarted(lease, admitted.generation);
    assert.ok(started && j.settleSuccess(lease, started.generation, 2));
    while (j.outboxHead(lease))
      j.removeDelivered(j.outboxHead(lease) as NonNullable<ReturnType<Journal["outboxHead"]>>);
  };
  const command = (lease: string, n: number): MaintenanceRequest => {
    const parsed = restartRequestSchema.parse({
      lease_uuid: lease,
      maintenance_id: randomUUID(),
      callback_url: "http://h/cb",
      admitted_at: stamp(n),
    });
    return parsed;
  };
  const admit = (req: MaintenanceRequest) => {
    const lease = j.getLease(req.leaseUuid);
    assert.ok(lease);
    return j.maintenance.admit({
      req,
      generation: lease.generation,
      operationId: lease.operationId,
      sourceRelease: lease.release,
      image: lease.image,
      nowMs: 10,
    });
  };

  it("keeps the newest 1,024 commands as receipts; the mark outlives the evicted ones", () => {
    const lease = randomUUID();
    ready(lease);
    const ids: string[] = [];
    for (let n = 1; n <= RECEIPT_WINDOW + 5; n++) {
      const cmd = admit(command(lease, n));
      assert.ok(cmd);
      ids.push(cmd.maintenanceId);
      assert.ok(j.maintenance.settleSuccess(cmd, 20));
      const head = j.outboxHead(lease);
      assert.ok(head);
      j.removeDelivered(head);
    }
    assert.equal(j.maintenance.receipts(lease), RECEIPT_WINDOW);
    for (const evicted of ids.slice(0, 5)) assert.equal(j.maintenance.get(evicted), undefined);
    assert.equal(j.maintenance.get(ids[5] as string)?.outcome, "success");
    assert.equal(j.maintenance.highWater(lease), "2026-12-01T10:00:00.001029000Z");
  });

  it("admits only against the lease generation it checked, and only onto a ready lease", () => {
    const lease = randomUUID();
    ready(lease);
    const stale = j.getLease(lease)?.generation as number;
    const first = admit(command(lease, 1));
    assert.ok(first);
    assert.equal(j.getLease(lease)?.status, "restarting");
    assert.equal(j.getLease(lease)?.head, "maintenance");
    const req = command(lease, 2);
    const refused = j.maintenance.admit({
      req,
      generation: stale,
      operationId: "x",
      sourceRelease: 1,
      image: "",
      nowMs: 11,
    });
    assert.equal(refused, undefined);
    assert.equal(j.maintenance.get(req.maintenanceId), undefined, "nothing written");
    assert.equal(j.maintenance.highWater(lease), "2026-12-01T10:00:00.000001000Z", "the mark did not move");
    // A stale settlement (another command than the lease's) changes nothing.
    assert.equal(j.maintenance.settleSuccess({ ...first, maintenanceId: randomUUID() }, 12), false);
    assert.ok(j.maintenance.settleFailure(first, { reason: "RestartFailed", message: "no" }, 12));
    assert.equal(j.maintenance.settleSuccess(first, 13), false, "settled once");
    const row = j.outboxHead(lease);
    assert.equal(row?.kind, "maintenance");
    assert.equal(row?.url, j.getLease(lease)?.lifecycleUrl);
    assert.deepEqual(JSON.parse(row?.body ?? "{}"), {
      lease_uuid: lease,
      status: "failed",
      error: "no",
      backend: "b",
      backend_storage_id: j.storageId,
      maintenance_id: first.maintenanceId,
      maintenance_admitted_at: stamp(1),
    });
    assert.equal(j.maintenance.completionQueued(lease), true);
    assert.equal(j.getLease(lease)?.status, "failed");
    assert.equal(admit(command(lease, 3)), undefined, "a failed lease admits no command");
  });
});
