import assert from "node:assert/strict";
import { it } from "node:test";
import { payloadAccepted } from "../../../src/core/lease-rules.ts";
import { type PayloadRecords, sha256Hex } from "../../../src/provider/store/index.ts";

/**
 * What every payload store (src/provider/store/payload-records.ts) must do, whatever its
 * engine. `open` gives a store on the suite's storage; `reopen` another handle on the same
 * storage (a restarted providerd, or another instance); `close` releases one; `tamper`
 * overwrites a row's bytes behind the store's back (disk or operator damage).
 */
export interface PayloadRecordsEngine {
  open(): Promise<PayloadRecords>;
  reopen(): Promise<PayloadRecords>;
  close(store: PayloadRecords): Promise<void>;
  tamper(leaseUuid: string, bytes: Buffer): Promise<void>;
}

const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const OTHER = "0190f3a2-7c1e-7000-8000-000000000002";
const MANIFEST = Buffer.from('{"image":"nginx:1.27"}');
/** A manifest holding a registry password (the other store tests use it too). */
export const SECRET = "hunter2-registry-pass";
export const WITH_PASSWORD = Buffer.from(
  JSON.stringify({
    services: {
      app: {
        image: "ghcr.io/acme/app:1",
        credentials: { host: "ghcr.io", username: "bot", password: SECRET },
      },
    },
  }),
);

export function payloadRecordsContract(engine: () => PayloadRecordsEngine): void {
  it("stores once with its SHA-256, across a restart; same bytes are a duplicate, other bytes a conflict", async () => {
    const e = engine();
    const first = await e.open();
    assert.equal(await first.has(LEASE), false);
    assert.equal(await first.put(LEASE, MANIFEST, 1, sha256Hex(MANIFEST).toUpperCase()), "stored");
    await first.durable();
    assert.equal(await first.put(LEASE, MANIFEST, 2), "duplicate");
    await assert.rejects(first.put(LEASE, Buffer.from("{}"), 3), { code: "ERR_PAYLOAD_CONFLICT" });
    await e.close(first);
    const store = await e.reopen();
    const got = await store.get(LEASE);
    assert.deepEqual(got?.payload, MANIFEST, "the first bytes, not the refused ones");
    assert.equal(got?.sha256, sha256Hex(MANIFEST));
    assert.equal(got?.uploadSha256, sha256Hex(MANIFEST));
    assert.equal(got?.storedAt, 1);
    assert.equal(got?.promoted, false);
    assert.equal(await store.has(LEASE), true);
    assert.deepEqual(await store.leases(), [LEASE]);
    assert.equal(await store.count(), 1);
    assert.equal(await store.delete(LEASE), true);
    assert.equal(await store.delete(LEASE), false, "nothing left to delete");
    assert.equal(await store.get(LEASE), undefined);
    assert.equal(await store.has(LEASE), false);
    assert.equal(await store.count(), 0);
    await e.close(store);
  });

  it("refuses bytes that do not match the expected hash, and lease ids that are not canonical, changing nothing", async () => {
    const e = engine();
    const store = await e.open();
    await assert.rejects(store.put(LEASE, MANIFEST, 1, "00".repeat(32)), {
      code: "ERR_PAYLOAD_HASH_MISMATCH",
    });
    for (const bad of ["not-a-uuid", LEASE.toUpperCase(), "", `${LEASE} `]) {
      await assert.rejects(store.put(bad, MANIFEST, 1), { code: "ERR_PAYLOAD_LEASE" }, bad);
      await assert.rejects(store.get(bad), { code: "ERR_PAYLOAD_LEASE" }, bad);
      await assert.rejects(store.has(bad), { code: "ERR_PAYLOAD_LEASE" }, bad);
      await assert.rejects(store.delete(bad), { code: "ERR_PAYLOAD_LEASE" }, bad);
      await assert.rejects(store.promote(bad, MANIFEST, 1), { code: "ERR_PAYLOAD_LEASE" }, bad);
      await assert.rejects(store.mask(bad), { code: "ERR_PAYLOAD_LEASE" }, bad);
    }
    assert.equal(await store.count(), 0);
    assert.deepEqual(await store.leases(), []);
    await e.close(store);
  });

  it("reports a row whose bytes no longer match their hash, instead of returning them", async () => {
    const e = engine();
    const store = await e.open();
    await store.put(LEASE, MANIFEST, 1);
    await store.durable();
    await e.tamper(LEASE, Buffer.from("tampered"));
    await assert.rejects(store.get(LEASE), { code: "ERR_PAYLOAD_CORRUPTED" });
    await e.close(store);
  });

  it("masks registry passwords on request, keeping the upload's hash for meta_hash and duplicates", async () => {
    const e = engine();
    const store = await e.open();
    await store.put(LEASE, WITH_PASSWORD, 1, sha256Hex(WITH_PASSWORD));
    await store.put(OTHER, MANIFEST, 1);
    assert.deepEqual(await store.holdingSecrets(), [LEASE], "only the row with a password is marked");
    assert.equal(await store.mask(OTHER), false);
    assert.equal(await store.mask(LEASE), true);
    assert.equal(await store.mask(LEASE), false, "idempotent");
    assert.deepEqual(await store.holdingSecrets(), []);
    const got = (await store.get(LEASE))!;
    assert.equal(JSON.parse(got.payload.toString()).services.app.credentials.password, "********");
    assert.equal(got.sha256, sha256Hex(got.payload), "sha256 is the stored bytes' (sent as payload_hash)");
    assert.equal(got.uploadSha256, sha256Hex(WITH_PASSWORD), "the upload's hash (meta_hash) is kept");
    assert.ok(payloadAccepted(got, sha256Hex(WITH_PASSWORD)));
    assert.equal(await store.put(LEASE, WITH_PASSWORD, 2), "duplicate", "the tenant re-sending its upload");
    assert.equal(await store.mask(OTHER), false, "no row holding nothing changes");
    assert.equal(await store.mask("0190f3a2-7c1e-7000-8000-0000000000ff"), false, "no row");
    await e.close(store);
  });

  it("promotes an update's manifest over the upload, masked, and idempotently", async () => {
    const e = engine();
    const store = await e.open();
    await store.put(LEASE, MANIFEST, 1);
    const sha = await store.promote(LEASE, WITH_PASSWORD, 5);
    assert.equal(await store.promote(LEASE, WITH_PASSWORD, 6), sha, "the same manifest again");
    await store.durable();
    const got = (await store.get(LEASE))!;
    assert.doesNotMatch(got.payload.toString(), new RegExp(SECRET), "promote keeps the masked form");
    assert.equal(got.sha256, sha);
    assert.equal(got.uploadSha256, sha, "a promoted manifest answers for its own hash");
    assert.equal(got.promoted, true);
    assert.equal(got.storedAt, 6);
    assert.deepEqual(await store.holdingSecrets(), []);
    await assert.rejects(
      store.put(LEASE, MANIFEST, 7),
      { code: "ERR_PAYLOAD_CONFLICT" },
      "the upload is gone",
    );
    // Promoting without an upload (a payload-less lease updated) stores it too.
    await store.promote(OTHER, MANIFEST, 8);
    assert.equal((await store.get(OTHER))?.promoted, true);
    assert.deepEqual(await store.leases(), [LEASE, OTHER]);
    await e.close(store);
  });

  it("a lease's racing uploads of the same bytes store it once; of different bytes, exactly one wins", async () => {
    const e = engine();
    const a = await e.open();
    const b = await e.reopen();
    const same = await Promise.all([a.put(LEASE, MANIFEST, 1), b.put(LEASE, MANIFEST, 1)]);
    assert.deepEqual(same.sort(), ["duplicate", "stored"]);
    const other = Buffer.from('{"image":"nginx:1.28"}');
    const raced = await Promise.allSettled([a.put(OTHER, MANIFEST, 1), b.put(OTHER, other, 1)]);
    const won = raced.filter((r) => r.status === "fulfilled");
    assert.equal(won.length, 1, "one stored");
    const lost = raced.find((r) => r.status === "rejected") as PromiseRejectedResult;
    assert.equal(lost.reason.code, "ERR_PAYLOAD_CONFLICT");
    const kept = (await a.get(OTHER))!.payload;
    assert.ok(
      kept.equals(raced[0]!.status === "fulfilled" ? MANIFEST : other),
      "the winner's bytes are kept",
    );
    await e.close(a);
    await e.close(b);
  });
}
