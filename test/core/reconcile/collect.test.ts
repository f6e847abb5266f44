import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type BackendView,
  budgetReads,
  type InventoryHalf,
  type PairInput,
  type ProvisionRow,
  pairInventories,
  rereadGate,
} from "../../../src/core/reconcile/index.ts";
import { BILLING_SKU, chainLease, lease, situation } from "./fixtures.ts";

const PIN = "9b2f6c1e-3d4a-4b5c-8d6e-7f8091a2b3c4";
const OTHER = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
const L1 = lease(1);
const L2 = lease(2);
const L3 = lease(3);

const rows = (...r: [string, string][]): InventoryHalf<ProvisionRow> => ({
  kind: "read",
  storageId: PIN,
  items: r.map(([leaseUuid, status]) => ({ leaseUuid, status })),
});
const kept = (...leases: string[]): InventoryHalf<string> => ({
  kind: "read",
  storageId: PIN,
  items: leases,
});
const pair = (over: Partial<PairInput>): BackendView =>
  pairInventories({ fenced: false, pinnedStorageId: PIN, provisions: rows(), retentions: kept(), ...over });

function plain(v: BackendView) {
  return v.kind === "answered"
    ? {
        kind: v.kind,
        provisions: [...v.provisions],
        retentions: [...v.retentions],
        untrusted: [...v.untrusted],
      }
    : { kind: v.kind, reason: v.reason, untrusted: [...v.untrusted] };
}

describe("reconcile collector gates: pairing a backend's two inventories", () => {
  it("both halves from the pinned identity: answered, with every row", () => {
    assert.deepEqual(plain(pair({ provisions: rows([L1, "ready"], [L2, "failed"]), retentions: kept(L3) })), {
      kind: "answered",
      provisions: [
        [L1, { status: "ready" }],
        [L2, { status: "failed" }],
      ],
      retentions: [L3],
      untrusted: [],
    });
  });

  it("a row's reported custom domains reach its observation; a row without them reports none", () => {
    const web = [{ service: "web", domain: "app.example.com" }];
    const half: InventoryHalf<ProvisionRow> = {
      kind: "read",
      storageId: PIN,
      items: [
        { leaseUuid: L1, status: "ready", customDomains: web },
        { leaseUuid: L2, status: "ready" },
      ],
    };
    assert.deepEqual(plain(pair({ provisions: half })).provisions, [
      [L1, { status: "ready", customDomains: web }],
      [L2, { status: "ready" }],
    ]);
  });

  it("rows without custom domains share one frozen observation per status and form", () => {
    const half: InventoryHalf<ProvisionRow> = {
      kind: "read",
      storageId: PIN,
      items: [
        { leaseUuid: L1, status: "ready", customDomains: [] },
        { leaseUuid: L2, status: "ready", customDomains: [] },
        { leaseUuid: L3, status: "ready" },
        { leaseUuid: lease(4), status: "ready" },
        { leaseUuid: lease(5), status: "failed", customDomains: [] },
      ],
    };
    const v = pair({ provisions: half });
    assert.equal(v.kind, "answered");
    const obs = (l: string) => (v.kind === "answered" ? v.provisions.get(l) : undefined);
    assert.deepEqual(obs(L1), { status: "ready", customDomains: [] });
    assert.equal(obs(L1), obs(L2));
    assert.ok(Object.isFrozen(obs(L1)) && Object.isFrozen(obs(L1)?.customDomains));
    assert.deepEqual(obs(L3), { status: "ready" });
    assert.equal(obs(L3), obs(lease(4)));
    assert.notEqual(obs(L1), obs(L3), "reported none is not 'does not report'");
    assert.deepEqual(obs(lease(5)), { status: "failed", customDomains: [] });
  });

  it("a lease in both endpoints is untrusted there; its siblings keep their evidence", () => {
    const v = plain(pair({ provisions: rows([L1, "ready"], [L2, "ready"]), retentions: kept(L2) }));
    assert.equal(v.kind, "answered");
    assert.deepEqual(v.untrusted, [L2]);
    assert.deepEqual("provisions" in v && v.provisions.map(([l]) => l), [L1, L2]);
  });

  it("a lease listed twice in /provisions is untrusted", () => {
    assert.deepEqual(plain(pair({ provisions: rows([L1, "ready"], [L1, "failed"]) })).untrusted, [L1]);
  });

  it("a fenced backend is silent and never read", () => {
    assert.deepEqual(plain(pair({ fenced: true, provisions: rows([L1, "ready"]) })), {
      kind: "silent",
      reason: "fenced",
      untrusted: [],
    });
  });

  it("a half that could not be read makes it silent, and the other half is not used", () => {
    for (const over of [
      { retentions: { kind: "unreachable" } },
      { provisions: { kind: "unreachable" } },
    ] as const) {
      assert.deepEqual(plain(pair({ provisions: rows([L1, "ready"]), retentions: kept(L2), ...over })), {
        kind: "silent",
        reason: "unreachable",
        untrusted: [],
      });
    }
  });

  it("a refused half rejects the response; what either half named is untrusted", () => {
    const v = pair({ provisions: rows([L1, "ready"]), retentions: { kind: "rejected", positives: [L2] } });
    assert.deepEqual(plain(v), { kind: "silent", reason: "rejected", untrusted: [L1, L2] });
  });

  it("another storage identity than the pin rejects the response", () => {
    const foreign: InventoryHalf<string> = { kind: "read", storageId: OTHER, items: [L3] };
    assert.deepEqual(plain(pair({ provisions: rows([L1, "ready"]), retentions: foreign })), {
      kind: "silent",
      reason: "rejected",
      untrusted: [L1, L3],
    });
  });
});

describe("reconcile collector gates: terminal budgets to read", () => {
  it("the failed workloads of ACTIVE leases, on every trusted reporter", () => {
    const input = situation({
      chain: [
        chainLease(L1, "ACTIVE"),
        chainLease(L2, "PENDING"),
        chainLease(L3, "ACTIVE", { skus: [BILLING_SKU] }),
        chainLease(lease(4), "ACTIVE"),
      ],
      backends: {
        a: { provisions: { [L1]: "failed", [L2]: "failed", [L3]: "failed", [lease(4)]: "ready" } },
        b: { provisions: { [L1]: "failed" }, retentions: [L1], untrusted: [L1] },
        c: { silent: "unreachable" },
      },
    });
    assert.deepEqual(budgetReads(input), [{ lease: L1, backend: "a" }]);
  });
});

describe("reconcile act gate: the exact re-read", () => {
  it("proceeds only on CLOSED, REJECTED or EXPIRED, and says why it refuses", () => {
    for (const state of ["LEASE_STATE_CLOSED", "LEASE_STATE_REJECTED", "LEASE_STATE_EXPIRED"])
      assert.deepEqual(rereadGate({ kind: "found", state }), { proceed: true });
    assert.deepEqual(rereadGate({ kind: "not_found" }), { proceed: false, reason: "reread_not_found" });
    assert.deepEqual(rereadGate({ kind: "failed" }), { proceed: false, reason: "reread_failed" });
    assert.deepEqual(rereadGate({ kind: "found", state: "LEASE_STATE_ACTIVE" }), {
      proceed: false,
      reason: "reread_live",
    });
    for (const state of ["LEASE_STATE_UNSPECIFIED", "7"])
      assert.deepEqual(rereadGate({ kind: "found", state }), {
        proceed: false,
        reason: "reread_unknown_state",
      });
  });
});
