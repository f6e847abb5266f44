import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { classifyMutation, countsAsFailure } from "../../../src/provider/backend-client/index.ts";

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const empty = Buffer.alloc(0);

describe("mutation outcome classification (pure)", () => {
  const rows: [string, number, number, Buffer, string, string?][] = [
    ["expected status", 202, 202, json({ provision_id: "x" }), "accepted"],
    ["expected status, empty body", 204, 204, empty, "accepted"],
    ["other 2xx", 200, 202, json({}), "ambiguous", "unexpected-status"],
    ["400 envelope", 400, 202, json({ error: "bad" }), "refused"],
    [
      "400 known validation code",
      400,
      202,
      json({ error: "bad", validation_code: "invalid_manifest" }),
      "refused",
    ],
    ["400 with a machine code", 400, 202, json({ error: "bad", code: "quota" }), "ambiguous", "unknown-code"],
    ["400 empty", 400, 202, empty, "ambiguous", "unexpected-status"],
    ["409 empty", 409, 202, empty, "refused"],
    [
      "409 already_provisioned",
      409,
      202,
      json({ error: "dup", code: "already_provisioned" }),
      "ambiguous",
      "already-provisioned",
    ],
    [
      "409 storage mismatch code",
      409,
      202,
      json({ error: "x", code: "storage_identity_mismatch" }),
      "ambiguous",
      "unknown-code",
    ],
    ["422 demote_exceeds_tier", 422, 202, json({ error: "too big", code: "demote_exceeds_tier" }), "refused"],
    ["422 empty", 422, 202, empty, "refused"],
    ["503 capacity", 503, 202, json({ error: "full", code: "insufficient_resources" }), "refused"],
    ["503 plain", 503, 202, json({ error: "busy" }), "ambiguous", "unknown-code"],
    ["503 empty", 503, 202, empty, "ambiguous", "server-error"],
    ["500", 500, 202, json({ error: "x" }), "ambiguous", "server-error"],
    ["404 (off-contract)", 404, 202, json({ error: "not found" }), "ambiguous", "unexpected-status"],
    [
      "duplicate keys are malformed",
      400,
      202,
      Buffer.from('{"error":"a","error":"b"}'),
      "ambiguous",
      "malformed",
    ],
    ["error must be non-empty", 409, 202, json({ error: "" }), "ambiguous", "malformed"],
  ];
  for (const [name, status, expected, body, kind, reason] of rows) {
    it(name, () => {
      const out = classifyMutation(status, expected, body);
      assert.equal(out.kind, kind);
      if (reason !== undefined) assert.equal(out.kind === "ambiguous" && out.reason, reason);
    });
  }

  it("relays the envelope fields of a refusal", () => {
    assert.deepEqual(
      classifyMutation(400, 202, json({ error: "unknown SKU", validation_code: "unknown_sku" })),
      {
        kind: "refused",
        status: 400,
        error: "unknown SKU",
        validationCode: "unknown_sku",
      },
    );
  });
});

describe("circuit-breaker accounting (pure)", () => {
  it("domain answers do not count; server trouble does", () => {
    assert.equal(countsAsFailure(202, empty), false);
    for (const s of [400, 404, 409, 422])
      assert.equal(countsAsFailure(s, json({ error: "x" })), false, String(s));
    assert.equal(countsAsFailure(503, json({ error: "full", code: "insufficient_resources" })), false);
    assert.equal(countsAsFailure(503, json({ error: "down" })), true);
    assert.equal(countsAsFailure(503, Buffer.from("<html>")), true);
    assert.equal(countsAsFailure(500, empty), true);
    assert.equal(countsAsFailure(401, json({ error: "invalid signature" })), true);
  });
});
