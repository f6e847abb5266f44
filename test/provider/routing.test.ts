import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type BackendLoad,
  backendPermissions,
  type RoutableBackend,
  type RouteDecision,
  route,
} from "../../src/provider/router.ts";

const A = "0190f3a2-7c1e-7000-8000-00000000000a";
const B = "0190f3a2-7c1e-7000-8000-00000000000b";
const UNLISTED = "0190f3a2-7c1e-7000-8000-0000000000ff";

function be(name: string, skus: string[], flags: Partial<RoutableBackend> = {}): RoutableBackend {
  return { name, skus, isDefault: false, fenced: false, draining: false, ...flags };
}
function load(allocated: number, total: number, diskWithheld = false): BackendLoad {
  return { allocatedCpuCores: allocated, totalCpuCores: total, diskWithheld };
}

interface Row {
  name: string;
  sku: string;
  backends: RoutableBackend[];
  loads?: [string, BackendLoad][];
  inFlight?: [string, number][];
  roundRobin?: number;
  expect: string | `unroutable:${string}`;
  via?: string;
}

const ROWS: Row[] = [
  { name: "no backends", sku: A, backends: [], expect: "unroutable:no-backends" },
  { name: "exact SKU list", sku: B, backends: [be("x", [A]), be("y", [B])], expect: "y", via: "only-match" },
  {
    name: "unlisted SKU → default backend",
    sku: UNLISTED,
    backends: [be("x", [A]), be("y", [B], { isDefault: true })],
    expect: "y",
    via: "fallback",
  },
  {
    name: "unlisted SKU → first when no default",
    sku: UNLISTED,
    backends: [be("x", [A]), be("y", [])],
    expect: "x",
  },
  {
    name: "backend with no skus matches nothing",
    sku: A,
    backends: [be("empty", []), be("x", [A])],
    expect: "x",
    via: "only-match",
  },
  {
    name: "fenced fallback receives nothing",
    sku: UNLISTED,
    backends: [be("x", [A], { isDefault: true, fenced: true }), be("y", [])],
    expect: "unroutable:fallback-unavailable",
  },
  {
    name: "draining fallback receives nothing new",
    sku: UNLISTED,
    backends: [be("x", [], { draining: true })],
    expect: "unroutable:fallback-unavailable",
  },
  {
    name: "fenced match skipped",
    sku: A,
    backends: [be("x", [A], { fenced: true }), be("y", [A])],
    expect: "y",
    via: "only-match",
  },
  {
    name: "draining match skipped",
    sku: A,
    backends: [be("x", [A], { draining: true }), be("y", [A])],
    expect: "y",
  },
  {
    name: "every match fenced or draining",
    sku: A,
    backends: [
      be("x", [A], { fenced: true }),
      be("y", [A], { draining: true }),
      be("z", [B], { isDefault: true }),
    ],
    expect: "unroutable:all-matches-unavailable",
  },
  {
    name: "several matches → lowest CPU ratio",
    sku: A,
    backends: [be("x", [A]), be("y", [A]), be("z", [A])],
    loads: [
      ["x", load(6, 8)],
      ["y", load(2, 8)],
      ["z", load(4, 8)],
    ],
    expect: "y",
    via: "load",
  },
  {
    name: "ratio, not absolute allocation",
    sku: A,
    backends: [be("x", [A]), be("y", [A])],
    loads: [
      ["x", load(4, 32)],
      ["y", load(2, 4)],
    ],
    expect: "x",
  },
  {
    name: "disk_withheld is avoided even when less loaded",
    sku: A,
    backends: [be("x", [A]), be("y", [A])],
    loads: [
      ["x", load(1, 8, true)],
      ["y", load(7, 8)],
    ],
    expect: "y",
    via: "load",
  },
  {
    name: "equal ratios → fewest in-flight",
    sku: A,
    backends: [be("x", [A]), be("y", [A])],
    loads: [
      ["x", load(2, 8)],
      ["y", load(2, 8)],
    ],
    inFlight: [
      ["x", 3],
      ["y", 1],
    ],
    expect: "y",
    via: "load",
  },
  {
    name: "full tie → round-robin (counter 0)",
    sku: A,
    backends: [be("x", [A]), be("y", [A])],
    loads: [
      ["x", load(2, 8)],
      ["y", load(2, 8)],
    ],
    roundRobin: 0,
    expect: "x",
    via: "round-robin",
  },
  {
    name: "full tie → round-robin (counter 1)",
    sku: A,
    backends: [be("x", [A]), be("y", [A])],
    loads: [
      ["x", load(2, 8)],
      ["y", load(2, 8)],
    ],
    roundRobin: 1,
    expect: "y",
    via: "round-robin",
  },
  {
    name: "no usable stats → round-robin",
    sku: A,
    backends: [be("x", [A]), be("y", [A]), be("z", [A])],
    loads: [
      ["x", load(0, 0)],
      ["y", load(Number.NaN, 8)],
    ],
    inFlight: [["x", 9]],
    roundRobin: 5,
    expect: "z",
    via: "round-robin",
  },
  {
    name: "a measured backend ranks before one without stats",
    sku: A,
    backends: [be("x", [A]), be("y", [A])],
    loads: [["y", load(7, 8)]],
    expect: "y",
    via: "load",
  },
];

describe("routing decision", () => {
  for (const row of ROWS) {
    it(row.name, () => {
      const d: RouteDecision = route({
        sku: row.sku,
        backends: row.backends,
        loads: new Map(row.loads ?? []),
        inFlight: new Map(row.inFlight ?? []),
        roundRobin: row.roundRobin ?? 0,
      });
      if (row.expect.startsWith("unroutable:")) {
        assert.equal(d.kind, "unroutable");
        assert.equal(d.kind === "unroutable" && d.reason, row.expect.slice("unroutable:".length));
      } else {
        assert.equal(d.kind === "backend" && d.backend, row.expect);
        if (row.via !== undefined) assert.equal(d.kind === "backend" && d.via, row.via);
      }
    });
  }

  it("round-robin spreads two sharing backends evenly and advances the counter", () => {
    const backends = [be("x", [A]), be("y", [A])];
    let roundRobin = 0;
    const counts = new Map<string, number>();
    for (let i = 0; i < 10; i++) {
      const d = route({ sku: A, backends, roundRobin });
      assert.equal(d.kind, "backend");
      if (d.kind !== "backend") return;
      counts.set(d.backend, (counts.get(d.backend) ?? 0) + 1);
      roundRobin = d.roundRobin;
    }
    assert.deepEqual(Object.fromEntries(counts), { x: 5, y: 5 });
  });

  it("only round-robin advances the counter", () => {
    const d = route({ sku: B, backends: [be("x", [A]), be("y", [B])], roundRobin: 7 });
    assert.equal(d.roundRobin, 7);
  });

  it("permissions: fenced gets nothing, draining gets everything but new leases", () => {
    assert.deepEqual(backendPermissions({ fenced: true, draining: false }), {
      newLeases: false,
      otherRequests: false,
      callbacks: false,
    });
    assert.deepEqual(backendPermissions({ fenced: false, draining: true }), {
      newLeases: false,
      otherRequests: true,
      callbacks: true,
    });
    assert.deepEqual(backendPermissions({ fenced: false, draining: false }), {
      newLeases: true,
      otherRequests: true,
      callbacks: true,
    });
  });
});
