import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LEASE_STATES } from "../../src/chain/port.ts";
import {
  contractItems,
  isBillingOnly,
  leaseEnded,
  leaseLive,
  payloadAccepted,
} from "../../src/core/lease-rules.ts";

/**
 * The lease rules every path asks (event path, sweep, tenant API, teardown check): each
 * chain state is ended, live, or neither (unknown), never two of them; only the three
 * terminal states may cost a lease its workload.
 */
describe("lease rules", () => {
  it("sorts every chain state into ended, live or unknown, and an unknown name into unknown", () => {
    const verdict = (s: string) => (leaseEnded(s) ? "ended" : leaseLive(s) ? "live" : "unknown");
    assert.deepEqual(
      Object.fromEntries([...LEASE_STATES, "LEASE_STATE_FROM_THE_FUTURE", ""].map((s) => [s, verdict(s)])),
      {
        LEASE_STATE_UNSPECIFIED: "unknown",
        LEASE_STATE_PENDING: "live",
        LEASE_STATE_ACTIVE: "live",
        LEASE_STATE_CLOSED: "ended",
        LEASE_STATE_REJECTED: "ended",
        LEASE_STATE_EXPIRED: "ended",
        LEASE_STATE_FROM_THE_FUTURE: "unknown",
        "": "unknown",
      },
    );
    for (const s of LEASE_STATES) assert.ok(!(leaseEnded(s) && leaseLive(s)), s);
  });

  it("billing-only needs every item on a billing-only SKU, and at least one item", () => {
    const only = new Set(["a", "b"]);
    assert.equal(isBillingOnly(["a", "b"], only), true);
    assert.equal(isBillingOnly(["a", "c"], only), false);
    assert.equal(isBillingOnly([], only), false);
    assert.equal(isBillingOnly(["b"], ["b"]), true, "a list works like a set");
  });

  it("a stored payload is sent only for the lease's meta_hash, or once an update promoted it", () => {
    assert.equal(payloadAccepted({ uploadSha256: "h1", promoted: false }, "h1"), true);
    assert.equal(payloadAccepted({ uploadSha256: "h1", promoted: false }, "h2"), false);
    assert.equal(payloadAccepted({ uploadSha256: "h1", promoted: true }, "h2"), true);
  });

  it("contract items leave empty names and domains out and carry the quantity as a number", () => {
    assert.deepEqual(
      contractItems([
        { skuUuid: "s1", quantity: 2n, serviceName: "", customDomain: "" },
        { skuUuid: "s2", quantity: "1", serviceName: "web", customDomain: "a.example" },
      ]),
      [
        { sku: "s1", quantity: 2 },
        { sku: "s2", quantity: 1, serviceName: "web", customDomain: "a.example" },
      ],
    );
  });
});
