import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  admittedAtKey,
  parseWith,
  restartRequestSchema,
  updateRequestSchema,
} from "../../../../src/core/backend-contract/index.ts";

const LEASE = "550e8400-e29b-41d4-a716-446655440000";
const MID = "6ba7b811-9dad-41d1-80b4-00c04fd430c8";
const URL = `http://fred.example:8080/callbacks/provision?lifecycle_id=${MID}`;

describe("restart/update request bodies", () => {
  it("reads a stamped restart; keeps admitted_at verbatim and a sortable key", () => {
    const r = parseWith(restartRequestSchema, {
      lease_uuid: LEASE,
      maintenance_id: MID,
      callback_url: URL,
      admitted_at: "2024-01-16T14:00:00.000001Z",
    });
    assert.ok(r.ok);
    assert.equal(r.value.kind, "restart");
    assert.equal(r.value.maintenanceId, MID);
    assert.equal(r.value.admittedAt, "2024-01-16T14:00:00.000001Z");
    assert.equal(r.value.admittedKey, "2024-01-16T14:00:00.000001000Z");
    assert.equal(r.value.payload, undefined);
  });

  it("accepts an unstamped command (an older providerd)", () => {
    const r = parseWith(restartRequestSchema, { lease_uuid: LEASE, maintenance_id: MID, callback_url: URL });
    assert.ok(r.ok);
    assert.equal(r.value.admittedAt, undefined);
    assert.equal(r.value.admittedKey, undefined);
  });

  it("refuses, first problem first: lease, maintenance_id, callback_url, admitted_at", () => {
    const problem = (body: Record<string, unknown>) => {
      const r = parseWith(restartRequestSchema, body);
      return r.ok ? "ok" : r.problem;
    };
    assert.equal(problem({}), "lease_uuid is required");
    assert.equal(problem({ lease_uuid: LEASE }), "maintenance_id is required");
    assert.equal(
      problem({ lease_uuid: LEASE, maintenance_id: MID.toUpperCase() }),
      "maintenance_id must be a canonical lowercase UUIDv4",
    );
    assert.equal(problem({ lease_uuid: LEASE, maintenance_id: MID }), "callback_url is required");
    for (const bad of ["2024-01-16T14:00:00+00:00", "2024-02-30T00:00:00Z", "yesterday", 5]) {
      assert.equal(
        problem({ lease_uuid: LEASE, maintenance_id: MID, callback_url: URL, admitted_at: bad }),
        "admitted_at must be an RFC 3339 UTC timestamp ending in Z",
        String(bad),
      );
    }
  });

  it("an update needs a payload and checks payload_hash when sent", () => {
    const base = { lease_uuid: LEASE, maintenance_id: MID, callback_url: URL };
    const missing = parseWith(updateRequestSchema, base);
    assert.deepEqual(missing, { ok: false, problem: "payload is required" });
    const ok = parseWith(updateRequestSchema, { ...base, payload: "e30=" });
    assert.ok(ok.ok);
    assert.equal(ok.value.kind, "update");
    assert.equal(ok.value.payload?.toString(), "{}");
    assert.equal(ok.value.payloadHash?.length, 64);
    const wrong = parseWith(updateRequestSchema, { ...base, payload: "e30=", payload_hash: "00".repeat(32) });
    assert.deepEqual(wrong, { ok: false, problem: "payload_hash does not match payload" });
  });

  it("admitted_at keys order by instant whatever the fraction's length", () => {
    const keys = [
      "2024-01-16T14:00:00Z",
      "2024-01-16T14:00:00.000001Z",
      "2024-01-16T14:00:00.1Z",
      "2024-01-16T14:00:00.123456789Z",
      "2024-01-16T14:00:01Z",
    ].map((t) => admittedAtKey(t) as string);
    assert.deepEqual([...keys].sort(), keys);
    assert.equal(admittedAtKey("2024-01-16T14:00:00.5Z"), admittedAtKey("2024-01-16T14:00:00.500Z"));
  });
});
