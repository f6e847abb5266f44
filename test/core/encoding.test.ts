import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { decodeBase64Std, decodeHex, encodeBase64Std, parseStrictJson } from "../../src/core/encoding.ts";
import { type ErrorCode, isFredError } from "../../src/core/errors.ts";

const refused = (fn: () => unknown, code: ErrorCode) =>
  assert.throws(fn, (err: unknown) => isFredError(err, code), `expected ${code}`);

describe("strict base64", () => {
  it("round-trips any bytes (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        assert.deepEqual(new Uint8Array(decodeBase64Std(encodeBase64Std(bytes), "x")), bytes);
      }),
    );
  });
  it("refuses URL-safe, unpadded, whitespace, non-canonical and oversized input", () => {
    refused(() => decodeBase64Std("-_8=", "x"), "ERR_BASE64");
    refused(() => decodeBase64Std("YQ", "x"), "ERR_BASE64");
    refused(() => decodeBase64Std("YQ==\n", "x"), "ERR_BASE64");
    refused(() => decodeBase64Std(" YQ==", "x"), "ERR_BASE64");
    refused(() => decodeBase64Std("YR==", "x"), "ERR_BASE64");
    refused(() => decodeBase64Std("A".repeat(400), "x", 64), "ERR_BASE64");
    assert.equal(decodeBase64Std("YQ==", "x").toString(), "a");
  });
});

describe("hex", () => {
  it("accepts either case and checks the length", () => {
    assert.deepEqual(decodeHex("aBcD", "h", 2), Buffer.from([0xab, 0xcd]));
    refused(() => decodeHex("abc", "h"), "ERR_HEX");
    refused(() => decodeHex("zz", "h"), "ERR_HEX");
    refused(() => decodeHex("abcd", "h", 3), "ERR_HEX");
  });
});

describe("strict JSON", () => {
  it("parses ordinary documents, including escaped and nested keys", () => {
    assert.deepEqual(parseStrictJson('{"a":{"b":[{"a":1},{"a":2}]},"b":"}{,\\""}', 1000), {
      a: { b: [{ a: 1 }, { a: 2 }] },
      b: '}{,"',
    });
    assert.deepEqual(parseStrictJson('{"a\\u0062":1,"ab\\n":2}', 1000), { ab: 1, "ab\n": 2 });
  });
  it("refuses duplicate keys at any depth, including escaped spellings", () => {
    refused(() => parseStrictJson('{"a":1,"a":2}', 1000), "ERR_JSON_DUPLICATE_KEY");
    refused(() => parseStrictJson('{"x":[{"k":1,"k":1}]}', 1000), "ERR_JSON_DUPLICATE_KEY");
    refused(() => parseStrictJson('{"ab":1,"a\\u0062":2}', 1000), "ERR_JSON_DUPLICATE_KEY");
    // A key ending in an escaped backslash, a value holding an escaped quote, whitespace
    // before the colons: the key count must still see both spellings of `a\`.
    refused(
      () => parseStrictJson('{"a\\\\" :1, "b":"\\\\\\"x" ,\n"a\\\\"\t\n: 2}', 1000),
      "ERR_JSON_DUPLICATE_KEY",
    );
    assert.deepEqual(parseStrictJson('{"a\\\\" :1, "b":"\\\\\\"x" ,\n"c"\t\n: 2}', 1000), {
      "a\\": 1,
      b: '\\"x',
      c: 2,
    });
  });
  it("refuses invalid JSON, trailing garbage and oversized input before parsing", () => {
    refused(() => parseStrictJson("{", 1000), "ERR_JSON");
    refused(() => parseStrictJson('{"a":1} x', 1000), "ERR_JSON");
    refused(() => parseStrictJson(`"${"x".repeat(2000)}"`, 1000), "ERR_JSON_TOO_LARGE");
  });
  it("finds a planted duplicate in random objects and accepts them otherwise (property)", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { minKeys: 1 }), (obj) => {
        const text = JSON.stringify(obj);
        assert.deepEqual(parseStrictJson(text, 1e7), JSON.parse(text));
        const key = Object.keys(obj)[0] as string;
        const dup = `{${JSON.stringify(key)}:0,${text.slice(1)}`;
        refused(() => parseStrictJson(dup, 1e7), "ERR_JSON_DUPLICATE_KEY");
      }),
    );
  });
});
