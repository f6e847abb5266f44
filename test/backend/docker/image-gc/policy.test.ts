import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type CollectionFacts,
  familiarTag,
  type ImageGcPolicy,
  type LedgerImage,
  planCollection,
  removalTargets,
} from "../../../../src/backend/docker/image-gc/index.ts";

/** The image collection rules as a table: which ledger images go, why, and in what order. */

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 0, 10);
const GB = 1024 ** 3;
const POLICY: ImageGcPolicy = { afterMs: 24 * HOUR, highWaterPercent: 85, lowWaterPercent: 80 };

const image = (id: string, idleHours: number, refs = [`app/${id}:1`]): LedgerImage => ({
  id,
  refs,
  firstSeenMs: NOW - 100 * HOUR,
  lastUsedMs: NOW - idleHours * HOUR,
});

function facts(over: Partial<CollectionFacts> & { ledger: LedgerImage[] }): CollectionFacts {
  return {
    nowMs: NOW,
    present: new Map(over.ledger.map((i) => [i.id, GB])),
    needed: new Set(),
    referenced: new Set(),
    disk: { totalBytes: 100 * GB, usedBytes: 50 * GB },
    ...over,
  };
}

const removed = (f: CollectionFacts, policy = POLICY) =>
  planCollection(policy, f).remove.map((r) => `${r.image.id}:${r.cause}`);

describe("image collection plan", () => {
  const cases: { name: string; facts: CollectionFacts; remove: string[] }[] = [
    {
      name: "an unreferenced image unused for image_gc_after goes",
      facts: facts({ ledger: [image("a", 24)] }),
      remove: ["a:unused"],
    },
    {
      name: "an unreferenced image unused for less stays",
      facts: facts({ ledger: [image("a", 23.9)] }),
      remove: [],
    },
    {
      name: "an image a live, pending or retained lease (or any container) needs stays, however old",
      facts: facts({ ledger: [image("a", 1000)], needed: new Set(["a"]) }),
      remove: [],
    },
    {
      name: "an image only history (superseded, failed releases) references stays without disk pressure",
      facts: facts({ ledger: [image("a", 1000)], referenced: new Set(["a"]) }),
      remove: [],
    },
    {
      name: "an image no longer on the host is forgotten, not removed",
      facts: facts({ ledger: [image("a", 1000)], present: new Map() }),
      remove: [],
    },
    {
      name: "above the high-water mark young images go too, oldest-unused first, down to the low mark",
      facts: facts({
        ledger: [image("young", 1), image("older", 5), image("oldest", 10)],
        disk: { totalBytes: 100 * GB, usedBytes: 86 * GB },
        present: new Map([
          ["young", 3 * GB],
          ["older", 3 * GB],
          ["oldest", 3 * GB],
        ]),
      }),
      // 86 → 83 → 80: the low mark is reached after two.
      remove: ["oldest:disk_pressure", "older:disk_pressure"],
    },
    {
      name: "aged removals count toward the low mark before any young image goes",
      facts: facts({
        ledger: [image("young", 1), image("aged", 30)],
        disk: { totalBytes: 100 * GB, usedBytes: 90 * GB },
        present: new Map([
          ["young", 5 * GB],
          ["aged", 10 * GB],
        ]),
      }),
      remove: ["aged:unused"],
    },
    {
      name: "under pressure unreferenced images go before history, and needed ones never",
      facts: facts({
        ledger: [image("history", 100), image("free", 1), image("needed", 500)],
        needed: new Set(["needed"]),
        referenced: new Set(["history"]),
        disk: { totalBytes: 100 * GB, usedBytes: 99 * GB },
      }),
      remove: ["free:disk_pressure", "history:disk_pressure"],
    },
    {
      name: "at exactly the high-water mark nothing goes early",
      facts: facts({ ledger: [image("a", 1)], disk: { totalBytes: 100 * GB, usedBytes: 85 * GB } }),
      remove: [],
    },
    {
      name: "unknown disk figures: collection by age only",
      facts: facts({ ledger: [image("a", 1), image("b", 48)], disk: undefined }),
      remove: ["b:unused"],
    },
  ];
  for (const c of cases) {
    it(c.name, () => assert.deepEqual(removed(c.facts), c.remove));
  }

  it("a high-water mark of 0 collects every image no lease needs", () => {
    const f = facts({ ledger: [image("a", 0), image("b", 0)], needed: new Set(["b"]) });
    assert.deepEqual(removed(f, { ...POLICY, highWaterPercent: 0, lowWaterPercent: 0 }), ["a:disk_pressure"]);
  });

  it("reports what is in use (to restart its idle time), what is gone, and what waits", () => {
    const plan = planCollection(
      POLICY,
      facts({
        ledger: [image("needed", 50), image("history", 50), image("gone", 1), image("waiting", 2)],
        present: new Map([
          ["needed", GB],
          ["history", GB],
          ["waiting", 2 * GB],
        ]),
        needed: new Set(["needed"]),
        referenced: new Set(["history"]),
      }),
    );
    assert.deepEqual(plan.inUse.sort(), ["history", "needed"]);
    assert.deepEqual(plan.forget, ["gone"]);
    assert.deepEqual(plan.waiting, { count: 1, bytes: 2 * GB });
    assert.deepEqual(plan.remove, []);
  });
});

describe("image removal targets", () => {
  it("normalizes references the way the engine lists tags", () => {
    const table: [string, string | undefined][] = [
      ["nginx", "nginx:latest"],
      ["nginx:1.27", "nginx:1.27"],
      ["docker.io/library/nginx:1", "nginx:1"],
      ["library/nginx", "nginx:latest"],
      ["docker.io/user/app:2", "user/app:2"],
      ["index.docker.io/user/app", "user/app:latest"],
      ["localhost:5000/app", "localhost:5000/app:latest"],
      ["ghcr.io/org/app:v1", "ghcr.io/org/app:v1"],
      ["ghcr.io/org/app@sha256:abc", undefined],
    ];
    for (const [ref, tag] of table) assert.equal(familiarTag(ref), tag, ref);
  });

  it("removes by ID with at most one tag of ours, by tags when all are ours, never with a foreign tag", () => {
    const img = image("a", 100, ["docker.io/app/a:1", "app/a:2"]);
    assert.deepEqual(removalTargets(img, []), { by: "id" });
    assert.deepEqual(removalTargets(img, ["<none>:<none>"]), { by: "id" });
    assert.deepEqual(removalTargets(img, ["app/a:1"]), { by: "id" });
    assert.deepEqual(removalTargets(img, ["app/a:1", "app/a:2"]), {
      by: "tags",
      tags: ["app/a:1", "app/a:2"],
    });
    assert.deepEqual(removalTargets(img, ["app/a:1", "operator/backup:1"]), { by: "none" });
    assert.deepEqual(removalTargets(img, ["operator/backup:1"]), { by: "none" });
  });
});
