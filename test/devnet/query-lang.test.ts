import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { matches, parseQuery, QuerySyntaxError } from "../../src/devnet/query-lang.ts";

describe("event query language", () => {
  const events = {
    "tm.event": ["Tx"],
    "tx.hash": ["ABCDEF"],
    "tx.height": ["12"],
    "transfer.amount": ["10umfx", "3umfx"],
    "lease_created.provider_uuid": ["0190f7a0-0000-7000-8000-000000000001"],
  };

  it("parses the forms subscribers use", () => {
    assert.deepEqual(parseQuery("tm.event='Tx' AND lease_created.provider_uuid='x-1'"), [
      { key: "tm.event", op: "=", value: "Tx" },
      { key: "lease_created.provider_uuid", op: "=", value: "x-1" },
    ]);
    assert.deepEqual(parseQuery("tx.height>=5 AND tx.height<12.5 AND transfer.amount EXISTS"), [
      { key: "tx.height", op: ">=", value: 5 },
      { key: "tx.height", op: "<", value: 12.5 },
      { key: "transfer.amount", op: "EXISTS" },
    ]);
    assert.deepEqual(parseQuery("message.memo CONTAINS 'a b'"), [
      { key: "message.memo", op: "CONTAINS", value: "a b" },
    ]);
  });

  it("matches any value under a key; numbers compare numerically; hashes ignore case", () => {
    assert.ok(matches(parseQuery("tm.event='Tx' AND transfer.amount='3umfx'"), events));
    assert.ok(matches(parseQuery("tx.height>11 AND tx.height<=12"), events));
    assert.ok(!matches(parseQuery("tx.height>12"), events));
    assert.ok(matches(parseQuery("tx.hash='abcdef'"), events));
    assert.ok(matches(parseQuery("transfer.amount CONTAINS 'umfx'"), events));
    assert.ok(!matches(parseQuery("tm.event='NewBlock'"), events));
    assert.ok(!matches(parseQuery("lease_closed.provider_uuid EXISTS"), events));
  });

  it("refuses malformed queries with a syntax error", () => {
    for (const bad of [
      "",
      "tm.event",
      "tm.event=",
      "tm.event='Tx' AND",
      "tm.event='Tx' OR a.b='c'",
      "a.b=c",
      "a.b='unterminated",
      "a.b >>> 1",
    ]) {
      assert.throws(() => parseQuery(bad), QuerySyntaxError, JSON.stringify(bad));
    }
    assert.throws(() => parseQuery(`a.b='${"x".repeat(5000)}'`), QuerySyntaxError);
  });
});
