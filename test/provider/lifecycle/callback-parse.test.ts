import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseCallbackBody, parseCapability } from "../../../src/provider/callbacks/parse.ts";

const ID = "3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const SID = "6d1f3a2b-4c5e-4f70-9bac-1d2e3f4a5b6c";
const op = { kind: "operation", id: ID } as const;
const lc = { kind: "lifecycle", id: ID } as const;

describe("callback capability query", () => {
  it("accepts exactly one canonical v4 operation_id or lifecycle_id, next to other keys", () => {
    assert.deepEqual(parseCapability(`operation_id=${ID}`), op);
    assert.deepEqual(parseCapability(`a=1&lifecycle_id=${ID}`), lc);
  });

  const refusals: [string, string][] = [
    ["", "exactly one of operation_id or lifecycle_id is required"],
    [
      `operation_id=${ID}&lifecycle_id=${ID}`,
      "operation_id and lifecycle_id are mutually exclusive and may appear once",
    ],
    [
      `operation_id=${ID}&operation_id=${ID}`,
      "operation_id and lifecycle_id are mutually exclusive and may appear once",
    ],
    [`operation_id=${ID.toUpperCase()}`, "operation_id must be a canonical lowercase UUIDv4"],
    [`operation_id=${ID.replaceAll("-", "")}`, "operation_id must be a canonical lowercase UUIDv4"],
    [`lifecycle_id=urn:uuid:${ID}`, "lifecycle_id must be a canonical lowercase UUIDv4"],
    ["operation_id=", "operation_id must be a canonical lowercase UUIDv4"],
    [`operation_id=${LEASE}`, "operation_id must be a canonical lowercase UUIDv4"],
  ];
  for (const [query, problem] of refusals) {
    it(`refuses ${JSON.stringify(query)}`, () => {
      assert.deepEqual(parseCapability(query), { ok: false, problem });
    });
  }
});

describe("callback body", () => {
  const good = { lease_uuid: LEASE, status: "success", error: "", backend_storage_id: SID, backend: "x" };

  it("reads the fields and ignores body operation_id / lifecycle_id", () => {
    const r = parseCallbackBody({ ...good, operation_id: "spoofed" }, op);
    assert.deepEqual(r, {
      ok: true,
      callback: {
        capability: op,
        leaseUuid: LEASE,
        status: "success",
        error: "",
        storageId: SID,
        backendLabel: "x",
        retained: false,
      },
    });
    const dep = parseCallbackBody({ ...good, status: "deprovisioned", retained: true }, lc);
    assert.equal(dep.ok && dep.callback.retained, true);
  });

  const refusals: [string, unknown, "operation" | "lifecycle", string][] = [
    ["array", [], "operation", "body must be a JSON object"],
    ["no lease", { ...good, lease_uuid: undefined }, "operation", "lease_uuid must be a canonical UUID"],
    [
      "upper lease",
      { ...good, lease_uuid: LEASE.toUpperCase() },
      "operation",
      "lease_uuid must be a canonical UUID",
    ],
    ["bad status", { ...good, status: "ok" }, "operation", "status must be success, failed or deprovisioned"],
    [
      "no storage id",
      { ...good, backend_storage_id: undefined },
      "operation",
      "backend_storage_id must be a canonical lowercase UUIDv4",
    ],
    ["error type", { ...good, error: 5 }, "operation", "error must be a string"],
    ["retained type", { ...good, retained: "yes" }, "lifecycle", "retained must be a boolean"],
    [
      "retained on success",
      { ...good, retained: true },
      "lifecycle",
      "retained is allowed only with status deprovisioned",
    ],
    [
      "deprovisioned on operation URL",
      { ...good, status: "deprovisioned" },
      "operation",
      "deprovisioned is accepted only on a lifecycle_id URL",
    ],
    [
      "maintenance_id on operation URL",
      { ...good, maintenance_id: ID },
      "operation",
      "maintenance_id is not allowed on an operation_id URL or with deprovisioned",
    ],
    [
      "admitted_at without maintenance_id",
      { ...good, maintenance_admitted_at: "2026-01-01T00:00:00Z" },
      "lifecycle",
      "maintenance_admitted_at requires maintenance_id",
    ],
    [
      "admitted_at with offset",
      { ...good, maintenance_id: ID, maintenance_admitted_at: "2026-01-01T00:00:00+00:00" },
      "lifecycle",
      "maintenance_admitted_at must be an RFC 3339 UTC timestamp ending in Z",
    ],
  ];
  for (const [name, body, kind, problem] of refusals) {
    it(`refuses: ${name}`, () => {
      assert.deepEqual(parseCallbackBody(body, kind === "operation" ? op : lc), { ok: false, problem });
    });
  }
});
