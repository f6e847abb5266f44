/**
 * Pagination over ordered KV prefixes (single and merged per-state indexes), on a small
 * sorted in-memory KVStore: cursors, offsets, totals, reverse order and the refusals; and
 * the gRPC-status → ABCI error table for every status a query can raise (no query raises
 * FailedPrecondition today, so the wire tests cannot reach that row).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KVRange, KVStore } from "../../../src/devnet/module.ts";
import { grpcError, paginate } from "../../../src/devnet/query-kit.ts";

/** Sorted map with the KVStore range semantics (prefix, inclusive start, exclusive end, reverse). */
function memoryStore(keys: string[]): KVStore {
  const data = new Map<string, Uint8Array>(keys.map((k) => [k, new Uint8Array()]));
  return {
    get: (k) => data.get(k),
    has: (k) => data.has(k),
    set: (k, v) => void data.set(k, v),
    delete: (k) => void data.delete(k),
    *iterate(range: KVRange = {}) {
      let all = [...data.keys()].sort().filter((k) => k.startsWith(range.prefix ?? ""));
      if (range.start !== undefined) all = all.filter((k) => k >= range.start!);
      if (range.end !== undefined) all = all.filter((k) => k < range.end!);
      if (range.reverse) all.reverse();
      for (const k of all.slice(0, range.limit ?? all.length)) yield [k, data.get(k)!];
    },
  };
}

const store = memoryStore(["st/1/a", "st/1/d", "st/2/b", "st/2/e", "st/3/c", "other/z"]);
const states = ["st/1/", "st/2/", "st/3/"];
const req = (over: Record<string, unknown> = {}) => ({
  key: new Uint8Array(),
  offset: 0n,
  limit: 0n,
  countTotal: false,
  reverse: false,
  ...over,
});
const enc = new TextEncoder();
const dec = new TextDecoder();
const ids = (p: ReturnType<typeof paginate<string>>) => p.items;
const load = (suffix: string) => suffix;

describe("paginate", () => {
  it("merges per-state indexes in key order with an inclusive next_key", () => {
    const first = paginate(store, states, req({ limit: 2n }), load);
    assert.deepEqual(ids(first), ["a", "b"]);
    assert.equal(dec.decode(first.pagination.nextKey), "c");
    const second = paginate(store, states, req({ limit: 2n, key: first.pagination.nextKey }), load);
    assert.deepEqual(ids(second), ["c", "d"]);
    const last = paginate(store, states, req({ limit: 2n, key: enc.encode("e") }), load);
    assert.deepEqual([ids(last), last.pagination.nextKey.length], [["e"], 0]);
  });

  it("supports reverse order, offsets and totals", () => {
    const rev = paginate(store, states, req({ reverse: true, limit: 2n }), load);
    assert.deepEqual(ids(rev), ["e", "d"]);
    assert.equal(dec.decode(rev.pagination.nextKey), "c");
    assert.deepEqual(ids(paginate(store, states, req({ reverse: true, key: enc.encode("c") }), load)), [
      "c",
      "b",
      "a",
    ]);
    const off = paginate(store, states, req({ offset: 3n, countTotal: true }), load);
    assert.deepEqual([ids(off), off.pagination.total], [["d", "e"], 5n]);
    const one = paginate(store, "st/2/", req({ countTotal: true, limit: 1n }), load);
    assert.deepEqual([ids(one), one.pagination.total], [["b"], 2n]);
  });

  it("skips entries the loader rejects and caps the limit", () => {
    assert.deepEqual(ids(paginate(store, states, req(), (s) => (s === "c" ? undefined : s))), [
      "a",
      "b",
      "d",
      "e",
    ]);
    assert.equal(paginate(store, states, req({ limit: 5000n }), load, { maxLimit: 3 }).items.length, 3);
  });

  it("refuses key with offset, and offset/count_total on cursor-only queries", () => {
    assert.throws(
      () => paginate(store, states, req({ key: enc.encode("a"), offset: 1n }), load),
      /InvalidArgument/,
    );
    assert.throws(
      () => paginate(store, states, req({ offset: 1n }), load, { cursorOnly: true }),
      /InvalidArgument/,
    );
    assert.throws(() => paginate(store, states, req({ offset: 20_001n }), load), /ResourceExhausted/);
  });
});

describe("grpcError: the SDK's gRPC-to-ABCI mapping", () => {
  const rows = [
    ["NotFound", 22, "key not found"],
    ["InvalidArgument", 18, "invalid request"],
    ["FailedPrecondition", 18, "invalid request"],
    ["ResourceExhausted", 6, "unknown request"],
    ["Internal", 6, "unknown request"],
  ] as const;
  for (const [status, code, suffix] of rows) {
    it(`${status} → sdk code ${code}, log ending ": ${suffix}"`, () => {
      const err = grpcError(status, "what went wrong");
      assert.deepEqual(
        [err.codespace, err.abciCode, err.log],
        ["sdk", code, `rpc error: code = ${status} desc = what went wrong: ${suffix}`],
      );
    });
  }
});
