import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { deriveCreditAddress } from "../../../../src/devnet/economics/credit-address.ts";
import { selectExpired } from "../../../../src/devnet/economics/expiry.ts";
import { clampLimit, inclusivePage, withdrawPage } from "../../../../src/devnet/economics/paging.ts";
import {
  deterministicUuidV7,
  fnv1a64,
  fnv1a64Reference,
  isUuidV7,
} from "../../../../src/devnet/economics/uuidv7.ts";

const S = 1_000_000_000n;

describe("credit addresses", () => {
  it("match both ledger test vectors", () => {
    assert.equal(
      deriveCreditAddress("manifest1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc57qwfj5"),
      "manifest14a6ln6nqvsl04pvqdxflgcngdktx9esckkzzxpdw4f66e3nfct9qt22ksa",
    );
    assert.equal(
      deriveCreditAddress("manifest1hj5fveer5cjtn4wd6wstzugjfdxzl0xp8ws9ct"),
      "manifest1yjdjzekx7fsza4jtjw7rpj52egxjftsmgmd36sauhl0cz0ue8syqg3kmmy",
    );
  });
  it("refuse a malformed tenant address", () => {
    assert.throws(() => deriveCreditAddress("manifest1notbech32"));
  });
});

describe("deterministic UUIDv7", () => {
  it("uses standard FNV-1a 64", () => {
    assert.equal(fnv1a64([]), 0xcbf29ce484222325n);
    assert.equal(fnv1a64([new TextEncoder().encode("a")]), 0xaf63dc4c8601ec8cn);
  });
  it("computes the same hash on 16-bit limbs as on bigints", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 4 }), (chunks) => {
        assert.equal(fnv1a64(chunks), fnv1a64Reference(chunks));
      }),
      { numRuns: 300 },
    );
  });
  it("lays out time, sequence and hash as specified", () => {
    const input = {
      blockTimeMs: 0x0190d4a0b1c2,
      headerHash: new Uint8Array(32).fill(7),
      chainId: "fred-devnet-1",
      namespace: "billing",
      sequence: 0x123n,
    };
    const id = deterministicUuidV7(input);
    assert.ok(isUuidV7(id), id);
    assert.ok(id.startsWith("0190d4a0-b1c2-7123-"), id);
    const seqBytes = new Uint8Array([0, 0, 0, 0, 0, 0, 0x01, 0x23]);
    const enc = new TextEncoder();
    const h = fnv1a64([input.headerHash, enc.encode("fred-devnet-1"), enc.encode("billing"), seqBytes]);
    const tail = ((0x80n | ((h >> 56n) & 0x3fn)) << 56n) | (h & ((1n << 56n) - 1n));
    assert.equal(id.replaceAll("-", "").slice(16), tail.toString(16).padStart(16, "0"));
    assert.equal(deterministicUuidV7(input), id, "deterministic");
    assert.notEqual(deterministicUuidV7({ ...input, sequence: 0x124n }), id);
    assert.notEqual(deterministicUuidV7({ ...input, namespace: "sku-sku" }).slice(19), id.slice(19));
  });
});

describe("withdraw cursor (exclusive, last processed)", () => {
  const ids = ["a", "b", "c", "d", "e"];
  it("walks pages threading next_key back as key", () => {
    assert.deepEqual(withdrawPage(ids, "", 2), { page: ["a", "b"], hasMore: true, nextKey: "b" });
    assert.deepEqual(withdrawPage(ids, "b", 2), { page: ["c", "d"], hasMore: true, nextKey: "d" });
    assert.deepEqual(withdrawPage(ids, "d", 2), { page: ["e"], hasMore: false, nextKey: "" });
  });
  it("has no more when the limit matches the remainder exactly", () => {
    assert.deepEqual(withdrawPage(ids, "", 5), { page: ids, hasMore: false, nextKey: "" });
  });
});

describe("query cursor (inclusive, first unread)", () => {
  const pairs: [string, string][] = ["a", "b", "c", "d", "e"].map((k) => [k, k.toUpperCase()]);
  it("resumes at the first key not returned", () => {
    assert.deepEqual(inclusivePage(pairs, "", 2), { items: ["A", "B"], nextKey: "c" });
    assert.deepEqual(inclusivePage(pairs, "c", 2), { items: ["C", "D"], nextKey: "e" });
    assert.deepEqual(inclusivePage(pairs, "e", 2), { items: ["E"], nextKey: "" });
  });
  it("clamps limits", () => {
    assert.equal(clampLimit(0n, 100, 1000), 100);
    assert.equal(clampLimit(5000n, 100, 1000), 1000);
    assert.equal(clampLimit(7n, 100, 1000), 7);
  });
});

describe("pending expiry", () => {
  const T = 1_700_000_000n * S;
  it("expires strictly after created_at + pending_timeout", () => {
    const refs = [{ uuid: "x", createdNs: T }];
    assert.deepEqual(selectExpired(refs, T + 1800n * S, 1800n), []);
    assert.deepEqual(selectExpired(refs, T + 1800n * S + 1n, 1800n), ["x"]);
  });
  it("takes at most 100 per block, oldest first, stopping at the first live lease", () => {
    const refs = Array.from({ length: 150 }, (_, i) => ({ uuid: `u${i}`, createdNs: T + BigInt(i) * S }));
    const now = T + 2000n * S;
    const first = selectExpired(refs, now, 1800n);
    assert.equal(first.length, 100);
    assert.equal(first[0], "u0");
    // the next block takes the remaining 50 (created T+100…T+149 s, deadlines ≤ T+1949 s)
    assert.equal(selectExpired(refs.slice(100), now, 1800n).length, 50);
    assert.equal(selectExpired(refs.slice(100), T + 1900n * S, 1800n).length, 0);
  });
});
