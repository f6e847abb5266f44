import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { isCanonicalUuid, isUuidV4, newUuidV4 } from "../../src/core/uuid.ts";

describe("UUIDs", () => {
  it("accepts canonical lowercase v4 and what we mint", () => {
    assert.ok(isUuidV4("550e8400-e29b-41d4-a716-446655440000"));
    for (let i = 0; i < 100; i++) assert.ok(isUuidV4(newUuidV4()));
  });
  it("refuses non-canonical spellings and other versions or variants as v4", () => {
    for (const bad of [
      "550E8400-E29B-41D4-A716-446655440000",
      "{550e8400-e29b-41d4-a716-446655440000}",
      "urn:uuid:550e8400-e29b-41d4-a716-446655440000",
      "550e8400e29b41d4a716446655440000",
      "0190f3a2-7c1e-7000-8000-000000000001",
      "550e8400-e29b-41d4-c716-446655440000",
      "550e8400-e29b-41d4-a716-44665544000",
      " 550e8400-e29b-41d4-a716-446655440000",
      "",
      42,
    ]) {
      assert.equal(isUuidV4(bad), false, String(bad));
    }
  });
  it("accepts chain-minted v7 as canonical any-version, refusing upper case", () => {
    assert.ok(isCanonicalUuid("0190f3a2-7c1e-7000-8000-000000000001"));
    assert.equal(isCanonicalUuid("0190F3A2-7C1E-7000-8000-000000000001"), false);
    assert.equal(isCanonicalUuid("0190f3a2-7c1e-7000-8000-00000000000g"), false);
  });
  it("agrees with fast-check's UUID generator (property)", () => {
    fc.assert(
      fc.property(fc.uuid({ version: 4 }), (u) =>
        assert.ok(isUuidV4(u.toLowerCase()) && isCanonicalUuid(u.toLowerCase())),
      ),
    );
    fc.assert(fc.property(fc.uuid({ version: 7 }), (u) => assert.ok(isCanonicalUuid(u) && !isUuidV4(u))));
  });
});
