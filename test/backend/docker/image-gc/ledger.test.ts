import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, it } from "node:test";
import { ImageLedger } from "../../../../src/backend/docker/image-gc/index.ts";
import { type AdmitInput, Journal } from "../../../../src/backend/kit/journal/journal.ts";
import { RetentionStore } from "../../../../src/backend/kit/retention/index.ts";

/**
 * The image ledger on a real journal (migration 7): uses recorded before the journal is
 * bound are kept, references accumulate, and what the journal says is in use follows the
 * lease through admission, close and retention.
 */

describe("image ledger", () => {
  const journal = new Journal({
    path: ":memory:",
    mode: "bind-or-verify",
    storageId: randomUUID(),
    backendName: "b",
  });
  after(() => journal.close());

  const payload = (image: string) => Buffer.from(JSON.stringify({ services: { app: { image } } }));
  const admit = (lease: string, image: string): AdmitInput => {
    const op = randomUUID();
    return {
      leaseUuid: lease,
      tenant: "t",
      providerUuid: randomUUID(),
      operationId: op,
      callbackUrl: `http://h/cb?operation_id=${op}`,
      lifecycleUrl: `http://h/cb?lifecycle_id=${op}`,
      items: [{ sku: randomUUID(), quantity: 1 }],
      instances: [],
      payload: payload(image),
      payloadHash: undefined,
      image,
      requestDigest: "digest",
      nowMs: 1,
    };
  };
  const close = (lease: string, retain: boolean) => {
    const begun = journal.beginClose(lease, 5);
    assert.equal(begun.kind, "closing");
    if (begun.kind !== "closing") return;
    if (retain) new RetentionStore(journal).insertClosing(begun.lease, "", 5);
    assert.ok(journal.completeClose(lease, begun.lease.generation, 6, retain));
  };

  const ledger = new ImageLedger();
  const gone = randomUUID();
  const kept = randomUUID();

  it("keeps uses recorded before the journal is bound, and accumulates references without repeats", () => {
    ledger.used("sha256:a", "app:1", gone, 1, 100);
    assert.equal(ledger.bound, false);
    assert.throws(() => ledger.all(), /not bound/);
    ledger.bind(journal);
    ledger.used("sha256:a", "docker.io/library/app:1", gone, 1, 90);
    ledger.used("sha256:a", "app:1", gone, 1, 200);
    assert.deepEqual(ledger.all(), [
      { id: "sha256:a", refs: ["app:1", "docker.io/library/app:1"], firstSeenMs: 100, lastUsedMs: 200 },
    ]);
    ledger.touch(["sha256:a"], 150);
    assert.equal(ledger.all()[0]?.lastUsedMs, 200, "last use never moves back");
    ledger.touch(["sha256:a"], 300);
    assert.equal(ledger.all()[0]?.lastUsedMs, 300);
  });

  it("counts a lease's recorded use and manifest as needed until its close, and a retained one after", () => {
    journal.admitOperation(admit(gone, "app:1"));
    journal.admitOperation(admit(kept, "db:2"));
    ledger.used("sha256:b", "db:2", kept, 1, 100);
    assert.deepEqual([...ledger.recordedUses().needed].sort(), ["sha256:a", "sha256:b"]);
    assert.deepEqual([...ledger.recordedUses().releases].sort(), ["sha256:a", "sha256:b"]);
    assert.equal(ledger.manifests().needed.length, 4, "two lease rows and two deploying releases");

    close(gone, false);
    close(kept, true);
    const uses = ledger.recordedUses();
    assert.deepEqual([...uses.needed], ["sha256:b"], "the retained lease still needs its image");
    assert.deepEqual([...uses.releases], [], "no release rows are left");
    const needed = ledger.manifests().needed.map((b) => b.toString());
    assert.deepEqual(needed, [payload("db:2").toString()], "only the retention row's manifest is left");
  });

  it("forgets an image with its uses", () => {
    ledger.forget(["sha256:b"]);
    assert.deepEqual(
      ledger.all().map((i) => i.id),
      ["sha256:a"],
    );
    assert.deepEqual([...ledger.recordedUses().needed], []);
  });
});
