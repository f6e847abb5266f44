import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { inventoryReadiness } from "../../../src/provider/reconciler/readiness.ts";
import {
  attemptAt,
  BILLING_SKU,
  chainLease,
  confirmed,
  lease,
  situation,
} from "../../core/reconcile/fixtures.ts";

/**
 * /readyz's placement_inventory conditions from the latest sweep: a backend not heard from
 * since startup that could hold an unrecorded positive, and a fenced backend that may hold
 * an ACTIVE lease with no placement row. A silent backend with nothing unrecorded keeps
 * readiness (degraded, not unhealthy).
 */
const backends = { a: {}, b: { silent: "unreachable" as const }, f: { silent: "fenced" as const } };
const none = new Set<string>();

describe("reconciler: placement inventory readiness", () => {
  it("everything recorded: ready, whoever is silent", () => {
    const input = situation({
      backends,
      chain: [chainLease(lease(1), "ACTIVE"), chainLease(lease(2), "PENDING")],
      placements: { [lease(1)]: confirmed("b") },
    });
    assert.deepEqual(inventoryReadiness(input, new Set(["a"]), new Set(["f"])), {
      awaiting: [],
      fencedMayHold: false,
    });
  });

  it("an attempt at a backend not heard from since startup: awaited", () => {
    const input = situation({ backends, attempts: { [lease(1)]: attemptAt("b") } });
    assert.deepEqual(inventoryReadiness(input, new Set(["a"]), none).awaiting, ["b"]);
    assert.deepEqual(inventoryReadiness(input, new Set(["a", "b"]), none).awaiting, [], "b answered once");
  });

  it("an ACTIVE lease with no record: every silent backend is awaited, and a fenced one may hold it", () => {
    const input = situation({ backends, chain: [chainLease(lease(1), "ACTIVE")] });
    assert.deepEqual(inventoryReadiness(input, new Set(["a"]), new Set(["f"])), {
      awaiting: ["b"],
      fencedMayHold: true,
    });
  });

  it("billing-only and PENDING recordless leases are no unrecorded positives", () => {
    const input = situation({
      backends,
      chain: [chainLease(lease(1), "ACTIVE", { skus: [BILLING_SKU] }), chainLease(lease(2), "PENDING")],
    });
    assert.deepEqual(inventoryReadiness(input, none, new Set(["f"])), { awaiting: [], fencedMayHold: false });
  });
});
