import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { Harness } from "./harness.ts";
import { call } from "./tenant-client.ts";

/**
 * Clients written for the reference check its key sets: by default GET status and GET
 * provision answer only the reference's keys; `?include=` adds ours (credit on status,
 * terminal_budget on both), and any other include is a 400 envelope that reads nothing.
 */
const REFERENCE_STATUS_KEYS = [
  "lease_uuid",
  "tenant",
  "provider_uuid",
  "state",
  "requires_payload",
  "meta_hash_hex",
  "payload_received",
  "provisioning_started",
  "provision_status",
  "fail_count",
  "reason",
  "message",
  "retained_until",
  "items",
  "restore_hint",
  "partition",
];
const REFERENCE_PROVISION_KEYS = [
  "lease_uuid",
  "tenant",
  "provider_uuid",
  "status",
  "fail_count",
  "reason",
  "message",
  "retained_until",
  "items",
  "restore_hint",
  "partition",
];
const RETAINED_ONLY = ["retained_until", "items", "restore_hint", "partition"];
const LEASE = "0190f3a2-7c1e-7000-8000-0000000000e1";
const BUDGET = { verdict: "retry", consecutive_failures: 1 };
const CREDIT = { balance: "10umfx", burn_rate_per_hour: "1umfx", depletes_at: null };

let h: Harness;
let creditReads = 0;

before(async () => {
  const client = {
    backend: { name: "one", fenced: false },
    provisionInfo: async () => ({
      status: "failed",
      fail_count: 2,
      terminal_budget: BUDGET,
      reason: "ContainerExited",
      message: "container exited unexpectedly",
    }),
  } as unknown as BackendClient;
  h = await new Harness().start({
    clients: new Map([["one", client]]),
    credit: async () => {
      creditReads++;
      return CREDIT;
    },
  });
  h.leases.set(LEASE, { ...h.leases.get(h.lease(LEASE))!, metaHash: "ab".repeat(32) });
});
after(() => h.close());

const get = (route: "status" | "provision", query = "") =>
  call(h.url, `/v1/leases/${LEASE}/${route}${query}`, h.token(LEASE));
const keys = (body: Record<string, unknown>) => Object.keys(body).sort();
const without = (all: string[], ...drop: string[][]) => all.filter((k) => !drop.flat().includes(k)).sort();

describe("status and provision: the reference's keys by default, ours on request", () => {
  it("default GET status: exactly the reference's keys (no credit, no terminal_budget)", async () => {
    const r = await get("status");
    assert.equal(r.status, 200);
    assert.deepEqual(keys(r.body), without(REFERENCE_STATUS_KEYS, RETAINED_ONLY));
    assert.equal(creditReads, 0, "credit is not even read");
  });

  it("default GET provision: exactly the reference's keys (no terminal_budget)", async () => {
    const r = await get("provision");
    assert.equal(r.status, 200);
    assert.deepEqual(keys(r.body), without(REFERENCE_PROVISION_KEYS, RETAINED_ONLY));
  });

  it("include adds the keys named, either or both, in any order", async () => {
    const base = without(REFERENCE_STATUS_KEYS, RETAINED_ONLY);
    const cases: [string, string[]][] = [
      ["credit", ["credit"]],
      ["terminal_budget", ["terminal_budget"]],
      ["credit,terminal_budget", ["credit", "terminal_budget"]],
      ["terminal_budget,credit", ["credit", "terminal_budget"]],
    ];
    for (const [include, added] of cases) {
      const r = await get("status", `?include=${include}`);
      assert.equal(r.status, 200, include);
      assert.deepEqual(keys(r.body), [...base, ...added].sort(), include);
      if (added.includes("credit")) assert.deepEqual(r.body.credit, CREDIT);
      if (added.includes("terminal_budget")) assert.deepEqual(r.body.terminal_budget, BUDGET);
    }
    // The default form after an include is still the reference's (the reused answer is per form).
    assert.deepEqual(keys((await get("status")).body), base);
    const p = await get("provision", "?include=terminal_budget");
    assert.deepEqual(p.body.terminal_budget, BUDGET);
    const both = await get("provision", "?include=credit,terminal_budget");
    assert.deepEqual(
      keys(both.body),
      [...without(REFERENCE_PROVISION_KEYS, RETAINED_ONLY), "terminal_budget"].sort(),
    );
  });

  it("an unknown, repeated or empty include is 400 with the envelope, and reads nothing", async () => {
    const reads = creditReads;
    const error = "include must be a comma-separated list of credit, terminal_budget";
    for (const route of ["status", "provision"] as const) {
      for (const [query, message] of [
        ["?include=bogus", error],
        ["?include=credit,bogus", error],
        ["?include=", error],
        ["?include=credit,credit", error],
        ["?include=CREDIT", error],
        ["?include=credit%20", error],
        ["?include=credit&include=terminal_budget", "include may be given once"],
      ]) {
        const r = await get(route, query);
        assert.equal(r.status, 400, `${route}${query}`);
        assert.deepEqual(r.body, { error: message, code: 400 }, `${route}${query}`);
      }
    }
    assert.equal(creditReads, reads);
  });
});
