import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { isFredError } from "../../../src/core/errors.ts";
import { payloadAccepted } from "../../../src/core/lease-rules.ts";
import { PayloadStore, PlacementStore, sha256Hex, TokenTracker } from "../../../src/provider/store/index.ts";

const root = mkdtempSync(join(tmpdir(), "fred-stores-"));
after(() => rmSync(root, { recursive: true, force: true }));
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const MANIFEST = Buffer.from('{"image":"nginx:1.27"}');

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isFredError(err), String(err));
    return err.code;
  }
  assert.fail("expected a FredError");
}

describe("payload store", () => {
  it("stores once with its SHA-256; same bytes are a duplicate, other bytes a conflict", () => {
    const path = join(root, "payloads.db");
    {
      using store = PayloadStore.open(path);
      assert.equal(store.put(LEASE, MANIFEST, 1, sha256Hex(MANIFEST)), "stored");
      assert.equal(store.put(LEASE, MANIFEST, 2), "duplicate");
      assert.equal(
        code(() => store.put(LEASE, Buffer.from("{}"), 3)),
        "ERR_PAYLOAD_CONFLICT",
      );
    }
    assert.equal(statSync(path).mode & 0o777, 0o600);
    using store = PayloadStore.open(path);
    const got = store.get(LEASE);
    assert.deepEqual(got?.payload, MANIFEST);
    assert.equal(got?.sha256, sha256Hex(MANIFEST));
    assert.equal(got?.storedAt, 1);
    assert.equal(store.delete(LEASE), true);
    assert.equal(store.get(LEASE), undefined);
  });

  it("refuses bytes that do not match the expected hash, and bad lease ids", () => {
    using store = PayloadStore.open(join(root, "payloads-2.db"));
    assert.equal(
      code(() => store.put(LEASE, MANIFEST, 1, "00".repeat(32))),
      "ERR_PAYLOAD_HASH_MISMATCH",
    );
    assert.equal(
      code(() => store.put("not-a-uuid", MANIFEST, 1)),
      "ERR_PAYLOAD_LEASE",
    );
    assert.equal(store.has(LEASE), false);
  });

  it("detects a corrupted row on read", () => {
    const path = join(root, "payloads-3.db");
    PayloadStore.open(path).put(LEASE, MANIFEST, 1);
    const db = new Database(path);
    db.prepare("UPDATE payloads SET payload = ?").run(Buffer.from("tampered"));
    db.close();
    using store = PayloadStore.open(path);
    assert.equal(
      code(() => store.get(LEASE)),
      "ERR_PAYLOAD_CORRUPTED",
    );
  });

  it("masks registry passwords on request, keeping the upload's hash for meta_hash and duplicates", async () => {
    const path = join(root, "payloads-secret.db");
    const secret = "hunter2-registry-pass";
    const upload = Buffer.from(
      JSON.stringify({
        services: {
          app: {
            image: "ghcr.io/acme/app:1",
            credentials: { host: "ghcr.io", username: "bot", password: secret },
          },
        },
      }),
    );
    const OTHER = "0190f3a2-7c1e-7000-8000-000000000002";
    {
      using store = PayloadStore.open(path);
      store.put(LEASE, upload, 1, sha256Hex(upload));
      store.put(OTHER, MANIFEST, 1);
      assert.deepEqual(store.holdingSecrets(), [LEASE], "only the row with a password is marked");
      assert.equal(store.mask(OTHER), false);
      assert.equal(store.mask(LEASE), true);
      assert.equal(store.mask(LEASE), false, "idempotent");
      assert.deepEqual(store.holdingSecrets(), []);
      const got = store.get(LEASE)!;
      assert.equal(JSON.parse(got.payload.toString()).services.app.credentials.password, "********");
      assert.equal(got.sha256, sha256Hex(got.payload), "sha256 is the stored bytes' (sent as payload_hash)");
      assert.equal(got.uploadSha256, sha256Hex(upload), "the upload's hash (meta_hash) is kept");
      assert.ok(payloadAccepted(got, sha256Hex(upload)));
      assert.equal(
        store.put(LEASE, upload, 2),
        "duplicate",
        "the tenant re-sending its upload is no conflict",
      );
      store.promote(OTHER, upload, 3);
      assert.doesNotMatch(
        store.get(OTHER)!.payload.toString(),
        new RegExp(secret),
        "promote keeps the masked form",
      );
      await store.durable();
    }
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
