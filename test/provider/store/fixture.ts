import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, beforeEach } from "node:test";
import { isFredError } from "../../../src/core/errors.ts";
import { type Attempt, PlacementStore } from "../../../src/provider/store/index.ts";

/** What the placement store's tests share: two pinned backends, ids, and how errors are checked. */
export const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";
export const OTHER_PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000bb";
export const SID_1 = "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f";
export const SID_2 = "7a2d3b5f-9c4e-4d6f-8a71-8b9cad0e1f30";
export const LEASE_1 = "0190f3a2-7c1e-7000-8000-000000000001";
export const LEASE_2 = "0190f3a2-7c1e-7000-8000-000000000002";
export const OP_1 = "11111111-1111-4111-8111-111111111111";
export const OP_2 = "22222222-2222-4222-8222-222222222222";
export const T0 = 1_700_000_000_000;

/** A new store at `path` with backends "one" and "two" pinned at T0. */
export function createStore(path: string): PlacementStore {
  return PlacementStore.create(
    path,
    PROVIDER,
    [
      { name: "one", storageId: SID_1, baseline: { provisions: 0, retentions: 0 } },
      { name: "two", storageId: SID_2, baseline: { provisions: 0, retentions: 0 } },
    ],
    T0,
  );
}

export function attempt(lease: string, backend: string, op: string): Attempt {
  return { leaseUuid: lease, backend, operationId: op, kind: "provision", createdAt: T0 + 1 };
}

/** The code of the FredError `fn` throws. */
export function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isFredError(err), String(err));
    return err.code;
  }
  assert.fail("expected a FredError");
}

/**
 * A temporary directory removed after the file's tests, and a new database path in it for
 * each test (`.path`), so every test starts from an empty store.
 */
export function databasePerTest(prefix: string): { readonly path: string } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  let current = "";
  beforeEach(() => {
    current = join(root, `p${++n}.db`);
  });
  return {
    get path() {
      return current;
    },
  };
}
