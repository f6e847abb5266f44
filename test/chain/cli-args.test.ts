import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sanitizeReason } from "../../src/chain/tx/build.ts";
import {
  leaseView,
  parseAmountFlag,
  parseSkuSpec,
  privateKeyFrom,
  STATE_FILTERS,
} from "../../src/cli/chain.ts";
import { isFredError } from "../../src/core/errors.ts";

const usage = (e: unknown) => isFredError(e, "ERR_USAGE");

describe("fred chain argument rules", () => {
  it("--sku <uuid|name>[:quantity[:service]]", () => {
    assert.deepEqual(parseSkuSpec("docker-small"), { ref: "docker-small", quantity: 1n, serviceName: "" });
    assert.deepEqual(parseSkuSpec("docker-small:3:web-1"), {
      ref: "docker-small",
      quantity: 3n,
      serviceName: "web-1",
    });
    for (const bad of [
      "",
      ":1",
      "a:0",
      "a:-1",
      "a:1.5",
      "a:1000000001",
      "a:1:Bad_Name",
      "a:1:-x",
      "a:1:web:extra",
    ]) {
      assert.throws(() => parseSkuSpec(bad), usage, bad);
    }
  });

  it("--amount <integer><denom>", () => {
    assert.deepEqual(parseAmountFlag("1000000umfx"), { amount: "1000000", denom: "umfx" });
    assert.deepEqual(parseAmountFlag("007upwr"), { amount: "7", denom: "upwr" });
    for (const bad of ["0umfx", "umfx", "10", "1.5umfx", "-1umfx", "10 umfx", "1u"])
      assert.throws(() => parseAmountFlag(bad), usage, bad);
  });

  it("exactly one key source; --from needs --home", () => {
    assert.throws(() => privateKeyFrom({}), usage);
    assert.throws(() => privateKeyFrom({ keyHex: "aa", mnemonic: "b" }), usage);
    assert.throws(() => privateKeyFrom({ from: "tenant1" }), usage);
    assert.throws(
      () => privateKeyFrom({ keyHex: "zz" }),
      (e) => isFredError(e, "ERR_HEX"),
    );
    assert.equal(privateKeyFrom({ keyHex: "11".repeat(32) }).length, 32);
  });

  it("state filters and the lease view", () => {
    assert.deepEqual(Object.keys(STATE_FILTERS), ["pending", "active", "closed", "rejected", "expired"]);
    const view = leaseView({
      uuid: "u",
      tenant: "t",
      providerUuid: "p",
      state: "LEASE_STATE_ACTIVE",
      items: [
        {
          skuUuid: "s",
          quantity: 2n,
          serviceName: "",
          customDomain: "",
          lockedPrice: { denom: "upwr", amount: "5" },
        },
      ],
      metaHash: "",
      createdAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)),
      closedAt: undefined,
      lastSettledAt: undefined,
      acknowledgedAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 6)),
      rejectedAt: undefined,
      expiredAt: undefined,
      rejectionReason: "",
      closureReason: "",
    });
    assert.deepEqual(view, {
      uuid: "u",
      tenant: "t",
      provider_uuid: "p",
      state: "LEASE_STATE_ACTIVE",
      items: [{ sku_uuid: "s", quantity: 2, locked_price: { denom: "upwr", amount: "5" } }],
      meta_hash: "",
      created_at: "2026-01-02T03:04:05.000Z",
      acknowledged_at: "2026-01-02T03:04:06.000Z",
    });
  });

  it("reasons: control characters stripped, long ones cut at a character boundary to 256 bytes", () => {
    assert.equal(sanitizeReason("a\u0000b\nc\u007f"), "abc");
    const long = sanitizeReason("€".repeat(100));
    assert.ok(Buffer.byteLength(long) <= 256 && long.endsWith("..."));
    assert.equal(long, `${"€".repeat(84)}...`);
    assert.equal(sanitizeReason("x".repeat(256)), "x".repeat(256));
  });
});
