import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { isFredError } from "../../../src/core/errors.ts";
import { PayloadStore, PlacementStore, sha256Hex, TokenTracker } from "../../../src/provider/store/index.ts";
import { SECRET, WITH_PASSWORD } from "./payload-records-contract.ts";

const root = mkdtempSync(join(tmpdir(), "fred-stores-"));
after(() => rmSync(root, { recursive: true, force: true }));
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isFredError(err), String(err));
    return err.code;
  }
  assert.fail("expected a FredError");
}

describe("payload store: the SQLite file (the contract is payload-records.test.ts)", () => {
  it("is private to its owner, and a masked password is not left in any of its files", async () => {
    const path = join(root, "payloads-secret.db");
    const [secret, upload] = [SECRET, WITH_PASSWORD];
    const OTHER = "0190f3a2-7c1e-7000-8000-000000000002";
    {
      using store = PayloadStore.open(path);
      await store.put(LEASE, upload, 1, sha256Hex(upload));
      await store.durable();
      assert.equal(await store.mask(LEASE), true);
      await store.promote(OTHER, upload, 3);
      await store.durable();
    }
    assert.equal(statSync(path).mode & 0o777, 0o600);
    for (const file of readdirSync(root).filter((f) => f.startsWith("payloads-secret.db"))) {
      assert.equal(readFileSync(join(root, file)).includes(secret), false, `${file} holds no password`);
    }
  });

  it("is not interchangeable with another store kind", () => {
    const path = join(root, "tokens-as-payloads.db");
    TokenTracker.open(path).close();
    chmodSync(path, 0o600);
    assert.equal(
      code(() => PayloadStore.open(path)),
      "ERR_STORE_KIND",
    );
    assert.equal(
      code(() => PlacementStore.open(path, "0190f3a2-7c1e-7000-8000-0000000000aa")),
      "ERR_STORE_KIND",
    );
  });
});
