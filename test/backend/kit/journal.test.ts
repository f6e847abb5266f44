import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { initializeStorageIdentity } from "../../../src/backend/kit/backend.ts";
import { openJournalDatabase } from "../../../src/backend/kit/journal/identity.ts";
import { type AdmitInput, Journal } from "../../../src/backend/kit/journal/journal.ts";
import { isFredError } from "../../../src/core/errors.ts";

const dir = mkdtempSync(join(tmpdir(), "fred-journal-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return isFredError(err) ? err.code : String(err);
  }
  return "no error";
};

describe("journal storage identity", () => {
  it("initializes once (mode 0600), then verifies; refuses missing, unbound, foreign, too new", () => {
    const path = join(dir, "a.db");
    assert.equal(
      code(() => openJournalDatabase({ path, mode: "verify" })),
      "ERR_STORAGE_MISSING",
    );
    const id = initializeStorageIdentity(path);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(
      code(() => initializeStorageIdentity(path)),
      "ERR_STORAGE_ALREADY_BOUND",
    );
    const ok = openJournalDatabase({ path, mode: "verify" });
    assert.equal(ok.storageId, id);
    ok.database.close();
    assert.equal(
      code(() => openJournalDatabase({ path, mode: "verify", storageId: randomUUID() })),
      "ERR_STORAGE_MISMATCH",
    );
    const unbound = join(dir, "unbound.db");
    const raw = new Database(unbound);
    raw.exec("CREATE TABLE x (y)");
    raw.close();
    assert.equal(
      code(() => openJournalDatabase({ path: unbound, mode: "verify" })),
      "ERR_STORAGE_UNBOUND",
    );
    const newer = join(dir, "newer.db");
    initializeStorageIdentity(newer);
    const db = new Database(newer);
    db.pragma("user_version = 99");
    db.close();
    assert.equal(
      code(() => openJournalDatabase({ path: newer, mode: "verify" })),
      "ERR_JOURNAL_TOO_NEW",
    );
    assert.equal(
      code(() => openJournalDatabase({ path: join(dir, "b.db"), mode: "verify", storageId: "nope" })),
      "ERR_STORAGE_ID_INVALID",
    );
  });

  it("bind-or-verify binds an empty journal and refuses another id later", () => {
    const path = join(dir, "c.db");
    const id = randomUUID();
    openJournalDatabase({ path, mode: "bind-or-verify", storageId: id }).database.close();
    openJournalDatabase({ path, mode: "bind-or-verify", storageId: id }).database.close();
    assert.equal(
      code(() => openJournalDatabase({ path, mode: "bind-or-verify", storageId: randomUUID() })),
      "ERR_STORAGE_MISMATCH",
    );
  });
});

describe("journal heads, settlement and outbox", () => {
  const storageId = randomUUID();
  const j = new Journal({ path: ":memory:", mode: "bind-or-verify", storageId, backendName: "b" });
  after(() => j.close());
  const input = (lease: string, op = randomUUID()): AdmitInput => ({
    leaseUuid: lease,
    tenant: "t",
    providerUuid: randomUUID(),
    operationId: op,
    callbackUrl: `http://h/cb?operation_id=${op}`,
    lifecycleUrl: `http://h/cb?lifecycle_id=${op}`,
    items: [{ sku: randomUUID(), quantity: 1 }],
    instances: [],
    payload: undefined,
    payloadHash: undefined,
    image: "",
    requestDigest: "digest",
    nowMs: 1,
  });

  it("settles only the current generation, atomically with release and callback", () => {
    const lease = randomUUID();
    const admitted = j.admitOperation(input(lease));
    assert.equal(j.markStarted(lease, admitted.generation - 1), undefined, "stale generation refused");
    const started = j.markStarted(lease, admitted.generation);
    assert.ok(started);
    assert.equal(j.settleSuccess(lease, admitted.generation, 2), false, "pre-start generation is stale");
    assert.equal(j.settleSuccess(lease, started.generation, 2), true);
    assert.equal(j.settleSuccess(lease, started.generation, 2), false, "settles once");
    assert.equal(j.getLease(lease)?.status, "ready");
    assert.deepEqual(
      j.releases(lease).map((r) => r.status),
      ["active"],
    );
    const head = j.outboxHead(lease);
    assert.equal(head?.kind, "operation");
    assert.deepEqual(JSON.parse(head?.body ?? "{}"), {
      lease_uuid: lease,
      status: "success",
      error: "",
      backend: "b",
      backend_storage_id: storageId,
    });
  });

  it("a re-provision sent with masked passwords runs with the ones this journal holds; releases stay masked", () => {
    const lease = randomUUID();
    const manifest = (password: string) =>
      Buffer.from(
        JSON.stringify({
          services: {
            app: { image: "ghcr.io/acme/app:1", credentials: { host: "ghcr.io", username: "bot", password } },
          },
        }),
      );
    const first = j.admitOperation({ ...input(lease), payload: manifest("real-pass") });
    assert.equal(first.payload?.toString(), manifest("real-pass").toString());
    const started = j.markStarted(lease, first.generation);
    assert.ok(started && j.settleSuccess(lease, started.generation, 2));
    assert.ok(j.recordRuntimeFailure(lease, undefined, { reason: "Crashed", message: "gone" }, 3));
    const again = j.admitOperation({ ...input(lease), payload: manifest("********") });
    assert.equal(again.payload?.toString(), manifest("real-pass").toString(), "the held password is back");
    assert.equal(j.getLease(lease)?.payload?.toString(), manifest("real-pass").toString());
    for (const r of j.releases(lease)) assert.doesNotMatch(String(r.manifest), /real-pass/);
    const fresh = randomUUID();
    const unknown = j.admitOperation({ ...input(fresh), payload: manifest("********") });
    assert.equal(
      unknown.payload?.toString(),
      manifest("********").toString(),
      "nothing held: the mask stays",
    );
  });

  it("setCustomDomains changes only the items' custom_domain, matched by service name", () => {
    const lease = randomUUID();
    const [web, db] = [randomUUID(), randomUUID()];
    const items = [
      { sku: web, quantity: 1, service_name: "web" },
      { sku: db, quantity: 2, service_name: "db", custom_domain: "old.example.org" },
    ];
    const admitted = j.admitOperation({ ...input(lease), items });
    assert.equal(j.setCustomDomains(randomUUID(), items), false, "unknown lease");
    assert.equal(j.setCustomDomains(lease, items), false, "unchanged");
    // The request's sku and quantity are not the journal's business here: only the domains move.
    const next = [
      { sku: randomUUID(), quantity: 9, service_name: "web", custom_domain: "shop.example.org" },
      { sku: db, quantity: 2, service_name: "db" },
    ];
    assert.equal(j.setCustomDomains(lease, next), true);
    const after = j.getLease(lease);
    assert.deepEqual(after?.items, [
      { sku: web, quantity: 1, service_name: "web", custom_domain: "shop.example.org" },
      { sku: db, quantity: 2, service_name: "db" },
    ]);
    assert.equal(after?.generation, admitted.generation, "the lease head does not move");
    assert.equal(j.setCustomDomains(lease, next), false);
  });

  it("a close pre-empts an unresolved operation and queues both results in order, then tombstones", () => {
    const lease = randomUUID();
    const admitted = j.admitOperation(input(lease));
    const r = j.beginClose(lease, 3);
    assert.equal(r.kind, "closing");
    assert.equal(r.kind === "closing" && r.preempted, true);
    assert.equal(
      j.settleSuccess(lease, admitted.generation, 3),
      false,
      "the pre-empted operation cannot settle",
    );
    const closing = j.getLease(lease);
    assert.equal(closing?.head, "close");
    assert.equal(j.completeClose(lease, closing?.generation ?? 0, 4), true);
    assert.equal(j.getLease(lease), undefined);
    assert.equal(j.isTombstoned(lease), true);
    const first = j.outboxHead(lease);
    assert.equal(JSON.parse(first?.body ?? "{}").status, "failed");
    assert.ok(first && j.removeDelivered(first));
    const second = j.outboxHead(lease);
    assert.deepEqual(JSON.parse(second?.body ?? "{}").status, "deprovisioned");
    assert.equal(JSON.parse(second?.body ?? "{}").retained, false);
    assert.equal(second?.kind, "close");
    assert.equal(j.beginClose(lease, 5).kind, "tombstoned");
    assert.equal(j.beginClose(randomUUID(), 5).kind, "absent");
  });

  it("coalesces lifecycle observations and drops them behind a pending result", () => {
    const lease = randomUUID();
    const a = j.admitOperation(input(lease));
    const s = j.markStarted(lease, a.generation);
    assert.ok(s && j.settleSuccess(lease, s.generation, 5));
    // The success callback is still queued: an observation now is dropped (but the state changes).
    assert.equal(j.recordRuntimeFailure(lease, undefined, { reason: "X", message: "m" }, 6), true);
    assert.equal(j.getLease(lease)?.status, "failed");
    const head = j.outboxHead(lease);
    assert.equal(j.hasOutbox(lease), true);
    assert.ok(head && j.removeDelivered(head));
    assert.equal(j.outboxHead(lease), undefined);
    assert.equal(j.hasOutbox(lease), false);
  });

  it("removes exactly the delivered row", () => {
    const lease = randomUUID();
    const a = j.admitOperation(input(lease));
    const s = j.markStarted(lease, a.generation);
    assert.ok(s && j.settleFailure(lease, s.generation, { reason: "R", message: "boom" }, 7));
    const head = j.outboxHead(lease);
    assert.ok(head);
    assert.equal(j.removeDelivered({ ...head, deliveryId: randomUUID() }), false);
    assert.equal(j.removeDelivered(head), true);
    assert.equal(j.getLease(lease)?.failCount, 1);
    assert.equal(j.releases(lease)[0]?.reason, "R");
  });

  it("expires lifecycle observations only, never results", () => {
    const lease = randomUUID();
    const a = j.admitOperation(input(lease));
    const s = j.markStarted(lease, a.generation);
    assert.ok(s && j.settleSuccess(lease, s.generation, 10));
    const head = j.outboxHead(lease);
    assert.ok(head && j.removeDelivered(head));
    assert.equal(j.recordRuntimeFailure(lease, undefined, { reason: "X", message: "died" }, 20), true);
    assert.equal(j.outboxHead(lease)?.kind, "lifecycle");
    const other = randomUUID();
    const b = j.admitOperation(input(other));
    const sb = j.markStarted(other, b.generation);
    assert.ok(sb && j.settleSuccess(other, sb.generation, 0));
    assert.equal(j.expireLifecycle(1_000, 100), 1);
    assert.equal(j.outboxHead(lease), undefined);
    assert.equal(j.outboxHead(other)?.kind, "operation", "an old result stays");
  });
});

describe("journal re-attestation", () => {
  it("fails once the file at the journal path is replaced", () => {
    const path = join(dir, "attest.db");
    const j = new Journal({ path, mode: "bind-or-verify", storageId: randomUUID(), backendName: "b" });
    try {
      assert.equal(j.attest(), true);
      renameSync(path, `${path}.moved`);
      initializeStorageIdentity(path);
      assert.equal(j.attest(), false);
    } finally {
      j.close();
    }
  });
});
