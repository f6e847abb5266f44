import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backendError, parseBackendError, tenantError } from "../../src/core/envelope.ts";

describe("error envelopes", () => {
  it("tenant errors carry the HTTP status as code and an optional reason", () => {
    assert.deepEqual(tenantError(401, "unauthorized"), { error: "unauthorized", code: 401 });
    assert.deepEqual(tenantError(409, "conflict", "in_flight"), {
      error: "conflict",
      code: 409,
      reason: "in_flight",
    });
  });
  it("backend errors carry optional machine codes", () => {
    assert.deepEqual(backendError("bad"), { error: "bad" });
    assert.deepEqual(backendError("no", { validation_code: "unknown_sku" }), {
      error: "no",
      validation_code: "unknown_sku",
    });
    assert.deepEqual(backendError("dup", { code: "already_provisioned" }), {
      error: "dup",
      code: "already_provisioned",
    });
  });
  it("reads only well-formed backend envelopes", () => {
    assert.deepEqual(parseBackendError({ error: "x", code: "c", validation_code: "v", extra: 1 }), {
      error: "x",
      code: "c",
      validation_code: "v",
    });
    for (const bad of [null, "text", [], {}, { error: "" }, { error: 5 }, { message: "x" }]) {
      assert.equal(parseBackendError(bad), undefined, JSON.stringify(bad));
    }
    assert.deepEqual(parseBackendError({ error: "x", code: 7 }), { error: "x" });
  });
});
