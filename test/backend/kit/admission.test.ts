import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, it } from "node:test";
import { type AdmissionConfig, probe, requestDigest } from "../../../src/backend/kit/admission.ts";
import { ContractError } from "../../../src/backend/kit/errors.ts";
import { Journal } from "../../../src/backend/kit/journal/journal.ts";
import type { ProvisionRequest } from "../../../src/core/backend-contract/index.ts";

/** The redelivery probe against a real journal: what an operation id may and may not do. */
describe("provision probe: operation ids and redeliveries", () => {
  const journal = new Journal({
    path: ":memory:",
    mode: "bind-or-verify",
    storageId: randomUUID(),
    backendName: "b",
  });
  after(() => journal.close());
  const cfg = { journal } as AdmissionConfig;
  const SKU = "0190f3a2-7c1e-7000-8000-00000000a001";

  const request = (lease: string, op: string, over: Partial<ProvisionRequest> = {}): ProvisionRequest => ({
    leaseUuid: lease,
    tenant: "manifest1tenant",
    providerUuid: "01234567-89ab-7def-8123-456789abcdef",
    items: [{ sku: SKU, quantity: 1 }],
    operationId: op,
    callbackUrl: `http://h/cb?operation_id=${op}`,
    lifecycleUrl: `http://h/cb?lifecycle_id=${op}`,
    payload: undefined,
    payloadHash: undefined,
    ...over,
  });
  const admit = (req: ProvisionRequest) =>
    journal.admitOperation({
      ...req,
      instances: [],
      image: "",
      requestDigest: requestDigest(req),
      nowMs: 1,
    });
  const refusal = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      if (err instanceof ContractError) return { status: err.status, code: err.body.code };
      throw err;
    }
    return undefined;
  };

  it("digests what is asked, not how items are ordered or where the result goes", () => {
    const op = randomUUID();
    const a = request(randomUUID(), op, {
      items: [
        { sku: SKU, quantity: 1, service_name: "web" },
        { sku: SKU, quantity: 2, service_name: "db" },
      ],
    });
    const b = { ...a, items: [...a.items].reverse(), callbackUrl: "http://elsewhere/cb" };
    assert.equal(requestDigest(a), requestDigest(b));
    assert.notEqual(requestDigest(a), requestDigest({ ...a, tenant: "manifest1other" }));
    assert.notEqual(requestDigest(a), requestDigest({ ...a, payloadHash: "00".repeat(32) }));
  });

  it("acks the identical redelivery, refuses a differing one and another lease's use of the id", () => {
    const lease = randomUUID();
    const op = randomUUID();
    admit(request(lease, op));
    assert.equal(probe(cfg, request(lease, op))?.kind, "acknowledged");
    assert.deepEqual(
      refusal(() => probe(cfg, request(lease, op, { tenant: "manifest1other" }))),
      { status: 409, code: "already_provisioned" },
    );
    assert.deepEqual(
      refusal(() => probe(cfg, request(randomUUID(), op))),
      { status: 409, code: undefined },
    );
    assert.deepEqual(journal.operation(op)?.leaseUuid, lease);
  });

  it("compares an operation admitted before digests were kept against its lease row", () => {
    const lease = randomUUID();
    const op = randomUUID();
    admit(request(lease, op));
    journal.db.prepare("UPDATE operations SET request_digest = NULL WHERE operation_id = ?").run(op);
    assert.equal(journal.operation(op)?.requestDigest, undefined);
    assert.equal(probe(cfg, request(lease, op))?.kind, "acknowledged");
    assert.deepEqual(
      refusal(() => probe(cfg, request(lease, op, { items: [{ sku: SKU, quantity: 3 }] }))),
      { status: 409, code: "already_provisioned" },
    );
  });

  it("refuses any operation id once the lease is closing or closed", () => {
    const lease = randomUUID();
    const op = randomUUID();
    const a = admit(request(lease, op));
    const started = journal.markStarted(lease, a.generation);
    assert.ok(started && journal.settleSuccess(lease, started.generation, 2));
    const closing = journal.beginClose(lease, 3);
    assert.equal(closing.kind, "closing");
    assert.deepEqual(
      refusal(() => probe(cfg, request(lease, op))),
      { status: 409, code: undefined },
    );
    if (closing.kind !== "closing") return;
    assert.ok(journal.completeClose(lease, closing.lease.generation, 4));
    for (const id of [op, randomUUID()]) {
      assert.deepEqual(
        refusal(() => probe(cfg, request(lease, id))),
        { status: 409, code: undefined },
      );
    }
  });
});
