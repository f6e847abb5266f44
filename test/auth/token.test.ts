import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { makeSignDoc, serializeSignDoc } from "@cosmjs/amino";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import fc from "fast-check";
import { addressFromPubkey } from "../../src/auth/address.ts";
import { compressedPubkey, privateKeyFromMnemonic } from "../../src/auth/keys.ts";
import {
  adr036SignDoc,
  mintTenantToken,
  normalizeLowS,
  TokenError,
  tokenSignData,
  verifyTenantToken,
} from "../../src/auth/token.ts";

// fred-wire §1.14
const KEY = Buffer.from("8f7f28ced235ea1050d4f484312892104ba52a2fa8e8e631b431b3dc77e61d95", "hex");
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const T = 1735689600;
const NOW = T * 1000;
const ADDRESS = "manifest1m4h3krdn5nfass9g95dp6awtrpdjxj6hdye4vu";
const META = "6a896122d7bba3cfb7090000734c88c546c969b1f9f20aca28358b78a6a66d9c";
const VECTOR_TOKEN =
  "eyJ0ZW5hbnQiOiJtYW5pZmVzdDFtNGgza3JkbjVuZmFzczlnOTVkcDZhd3RycGRqeGo2aGR5ZTR2dSIsImxlYXNlX3V1aWQiOiIwMTkwZjNhMi03YzFlLTcwMDAtODAwMC0wMDAwMDAwMDAwMDEiLCJ0aW1lc3RhbXAiOjE3MzU2ODk2MDAsInB1Yl9rZXkiOiJBeVdpdmxSa3ltR3lOTXkyWTNOK1lqMnROMW0yZ2NLZlJmS1RkcG1BbXRDYyIsInNpZ25hdHVyZSI6ImhmRU42NHFQS3F4eHd3WnhpZnUxRHo3Y0pNWFRQa3FyWGVrdXY5aEdrcXRGSmFRTzduZ2U1aDlYdWtSTnhnZDZCUGpXKzZnSHZXTUtRQWZweGRlSVB3PT0ifQ==";

function decode(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token, "base64").toString("utf8"));
}
function encode(envelope: unknown): string {
  return Buffer.from(JSON.stringify(envelope)).toString("base64");
}
function errorCode(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof TokenError, `expected TokenError, got ${String(err)}`);
    return err.code;
  }
  assert.fail("expected the token to be refused");
}

describe("ADR-036 sign document", () => {
  it("is byte-identical to cosmjs amino serialisation (independent reference)", () => {
    const data = tokenSignData("access", ADDRESS, LEASE, T);
    const msg = {
      type: "sign/MsgSignData",
      value: { signer: ADDRESS, data: Buffer.from(data).toString("base64") },
    };
    const reference = serializeSignDoc(makeSignDoc([msg], { gas: "0", amount: [] }, "", "", 0, 0));
    assert.equal(adr036SignDoc(ADDRESS, data), Buffer.from(reference).toString("utf8"));
  });

  it("hashes to the fred-wire §1.14 digest", () => {
    const doc = adr036SignDoc(ADDRESS, tokenSignData("access", ADDRESS, LEASE, T));
    assert.equal(
      createHash("sha256").update(doc).digest("hex"),
      "4e566dc52a68a199ba0f7c074b0669e197d369a53763aa4cfafedaf616b6b7bf",
    );
  });

  it("agrees with cosmjs for random signers and payloads (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.string(), (seed, data) => {
        fc.pre(secp256k1.utils.isValidSecretKey(seed));
        const signer = addressFromPubkey(compressedPubkey(seed));
        const msg = {
          type: "sign/MsgSignData",
          value: { signer, data: Buffer.from(data).toString("base64") },
        };
        const reference = serializeSignDoc(makeSignDoc([msg], { gas: "0", amount: [] }, "", "", 0, 0));
        assert.equal(adr036SignDoc(signer, data), Buffer.from(reference).toString("utf8"));
      }),
      { numRuns: 50 },
    );
  });
});

describe("tenant tokens: known answers", () => {
  it("derives the vector's public key and address", () => {
    const pub = compressedPubkey(KEY);
    assert.equal(Buffer.from(pub).toString("base64"), "AyWivlRkymGyNMy2Y3N+Yj2tN1m2gcKfRfKTdpmAmtCc");
    assert.equal(addressFromPubkey(pub), ADDRESS);
  });

  it("mints exactly the vector's access token and verifies it", () => {
    const token = mintTenantToken({ privateKey: KEY, leaseUuid: LEASE, timestamp: T });
    assert.equal(token, VECTOR_TOKEN);
    const claims = verifyTenantToken(VECTOR_TOKEN, { nowMs: NOW, leaseUuid: LEASE });
    assert.deepEqual(claims, {
      kind: "access",
      tenant: ADDRESS,
      leaseUuid: LEASE,
      timestamp: T,
      replayKey: "hfEN64qPKqxxwwZxifu1Dz7cJMXTPkqrXekuv9hGkqtFJaQO7nge5h9XukRNxgd6BPjW+6gHvWMKQAfpxdeIPw==",
    });
  });

  it("mints the vector's payload-upload signature", () => {
    assert.equal(createHash("sha256").update('{"image":"nginx:1.25"}').digest("hex"), META);
    const token = mintTenantToken({ privateKey: KEY, leaseUuid: LEASE, timestamp: T, metaHash: META });
    const envelope = decode(token);
    assert.equal(
      envelope.signature,
      "qfqfqBomkVfbSNy53MFXRt/iGBWnYR7TfEMPgAN2f1RLyJah2e7VXrqAl+aAhAK9eAfFfmelY+tmRqz/ZaG5Sw==",
    );
    const claims = verifyTenantToken(token, { nowMs: NOW });
    assert.equal(claims.kind, "payload");
    assert.equal(claims.metaHash, META);
  });

  it("derives keys from a mnemonic at m/44'/118'/0'/0/0", () => {
    // The standard BIP-39 test mnemonic; its Cosmos address is widely published.
    const words =
      "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
    const key = privateKeyFromMnemonic(words);
    assert.equal(
      addressFromPubkey(compressedPubkey(key), "cosmos"),
      "cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4",
    );
  });
});

describe("tenant tokens: window and binding", () => {
  it("accepts age exactly 30 s, refuses 30 s + 1 ms", () => {
    assert.equal(verifyTenantToken(VECTOR_TOKEN, { nowMs: NOW + 30_000 }).tenant, ADDRESS);
    assert.equal(
      errorCode(() => verifyTenantToken(VECTOR_TOKEN, { nowMs: NOW + 30_001 })),
      "ERR_TOKEN_EXPIRED",
    );
  });

  it("accepts 10 s in the future, refuses more", () => {
    assert.equal(verifyTenantToken(VECTOR_TOKEN, { nowMs: NOW - 10_000 }).tenant, ADDRESS);
    assert.equal(
      errorCode(() => verifyTenantToken(VECTOR_TOKEN, { nowMs: NOW - 10_001 })),
      "ERR_TOKEN_FROM_FUTURE",
    );
  });

  it("refuses a token for another lease", () => {
    const other = "0190f3a2-7c1e-7000-8000-000000000002";
    assert.equal(
      errorCode(() => verifyTenantToken(VECTOR_TOKEN, { nowMs: NOW, leaseUuid: other })),
      "ERR_TOKEN_LEASE_MISMATCH",
    );
  });

  it("refuses a tenant that the key does not derive, including another prefix", () => {
    const env = decode(VECTOR_TOKEN);
    env.tenant = ADDRESS.toUpperCase();
    assert.equal(
      errorCode(() => verifyTenantToken(encode(env), { nowMs: NOW })),
      "ERR_TOKEN_TENANT_MISMATCH",
    );
    assert.equal(
      errorCode(() => verifyTenantToken(VECTOR_TOKEN, { nowMs: NOW, prefix: "cosmos" })),
      "ERR_TOKEN_TENANT_MISMATCH",
    );
  });

  it("refuses an access signature presented as a payload token and vice versa", () => {
    const env = decode(VECTOR_TOKEN);
    env.meta_hash = META;
    assert.equal(
      errorCode(() => verifyTenantToken(encode(env), { nowMs: NOW })),
      "ERR_TOKEN_BAD_SIGNATURE",
    );
    const payload = decode(
      mintTenantToken({ privateKey: KEY, leaseUuid: LEASE, timestamp: T, metaHash: META }),
    );
    delete payload.meta_hash;
    assert.equal(
      errorCode(() => verifyTenantToken(encode(payload), { nowMs: NOW })),
      "ERR_TOKEN_BAD_SIGNATURE",
    );
  });

  it("binds meta_hash exactly as sent (case matters)", () => {
    const upper = mintTenantToken({
      privateKey: KEY,
      leaseUuid: LEASE,
      timestamp: T,
      metaHash: META.toUpperCase(),
    });
    assert.equal(verifyTenantToken(upper, { nowMs: NOW }).metaHash, META.toUpperCase());
    const env = decode(upper);
    env.meta_hash = META;
    assert.equal(
      errorCode(() => verifyTenantToken(encode(env), { nowMs: NOW })),
      "ERR_TOKEN_BAD_SIGNATURE",
    );
  });
});

describe("tenant tokens: the verified-token cache", () => {
  // The first success is remembered by the token's text; these check what must still be
  // decided on every use.
  it("re-checks the time window and the lease on every use of a remembered token", () => {
    const token = mintTenantToken({ privateKey: KEY, leaseUuid: LEASE, timestamp: T + 7 });
    const now = (T + 7) * 1000;
    assert.equal(verifyTenantToken(token, { nowMs: now, leaseUuid: LEASE }).leaseUuid, LEASE);
    assert.equal(
      errorCode(() => verifyTenantToken(token, { nowMs: now + 30_001 })),
      "ERR_TOKEN_EXPIRED",
    );
    assert.equal(
      errorCode(() => verifyTenantToken(token, { nowMs: now - 10_001 })),
      "ERR_TOKEN_FROM_FUTURE",
    );
    const other = "0190f3a2-7c1e-7000-8000-000000000009";
    assert.equal(
      errorCode(() => verifyTenantToken(token, { nowMs: now, leaseUuid: other })),
      "ERR_TOKEN_LEASE_MISMATCH",
    );
    assert.equal(
      errorCode(() => verifyTenantToken(token, { nowMs: now, prefix: "cosmos" })),
      "ERR_TOKEN_TENANT_MISMATCH",
    );
  });

  it("never remembers a refusal, and hands out claims no caller can change", () => {
    const token = mintTenantToken({ privateKey: KEY, leaseUuid: LEASE, timestamp: T + 11 });
    const now = (T + 11) * 1000;
    assert.equal(
      errorCode(() => verifyTenantToken(token, { nowMs: now - 10_001 })),
      "ERR_TOKEN_FROM_FUTURE",
    );
    const claims = verifyTenantToken(token, { nowMs: now });
    assert.throws(() => {
      (claims as { tenant: string }).tenant = "manifest1someoneelse";
    }, TypeError);
    assert.equal(verifyTenantToken(token, { nowMs: now }).tenant, ADDRESS);
  });

  it("does not let a remembered token vouch for a tampered copy", () => {
    const token = mintTenantToken({ privateKey: KEY, leaseUuid: LEASE, timestamp: T + 13 });
    const now = (T + 13) * 1000;
    verifyTenantToken(token, { nowMs: now });
    const env = decode(token);
    env.lease_uuid = "0190f3a2-7c1e-7000-8000-00000000000a";
    assert.equal(
      errorCode(() => verifyTenantToken(encode(env), { nowMs: now })),
      "ERR_TOKEN_BAD_SIGNATURE",
    );
  });
});

describe("tenant tokens: low-S normalisation", () => {
  it("accepts the high-S twin of a signature and reports the same replay key", () => {
    const env = decode(VECTOR_TOKEN);
    const sig = Buffer.from(env.signature as string, "base64");
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const s = BigInt(`0x${sig.subarray(32).toString("hex")}`);
    const high = Buffer.concat([
      sig.subarray(0, 32),
      Buffer.from((n - s).toString(16).padStart(64, "0"), "hex"),
    ]);
    env.signature = high.toString("base64");
    const claims = verifyTenantToken(encode(env), { nowMs: NOW });
    assert.equal(claims.replayKey, sig.toString("base64"));
    assert.deepEqual(normalizeLowS(high), sig);
    assert.deepEqual(normalizeLowS(sig), sig);
  });
});

describe("tenant tokens: bad input", () => {
  const good = decode(VECTOR_TOKEN);
  const cases: [string, () => string, string][] = [
    ["empty string", () => "", "ERR_TOKEN_MALFORMED"],
    ["truncated base64", () => VECTOR_TOKEN.slice(0, -3), "ERR_TOKEN_MALFORMED"],
    [
      "URL-safe base64",
      () => VECTOR_TOKEN.replaceAll("+", "-").replaceAll("/", "_") + "-",
      "ERR_TOKEN_MALFORMED",
    ],
    ["unpadded base64", () => VECTOR_TOKEN.replace(/=+$/, ""), "ERR_TOKEN_MALFORMED"],
    ["not JSON", () => Buffer.from("hello").toString("base64"), "ERR_TOKEN_MALFORMED"],
    ["JSON array", () => encode([good]), "ERR_TOKEN_MALFORMED"],
    ["JSON null", () => encode(null), "ERR_TOKEN_MALFORMED"],
    ["huge input", () => "A".repeat(1_000_000), "ERR_TOKEN_MALFORMED"],
    [
      "duplicate key",
      () =>
        Buffer.from(JSON.stringify(good).replace('{"tenant"', '{"tenant":"x","tenant"')).toString("base64"),
      "ERR_TOKEN_MALFORMED",
    ],
    ["missing tenant", () => encode({ ...good, tenant: undefined }), "ERR_TOKEN_MALFORMED"],
    ["empty lease", () => encode({ ...good, lease_uuid: "" }), "ERR_TOKEN_MALFORMED"],
    ["timestamp as string", () => encode({ ...good, timestamp: String(T) }), "ERR_TOKEN_MALFORMED"],
    ["fractional timestamp", () => encode({ ...good, timestamp: T + 0.5 }), "ERR_TOKEN_MALFORMED"],
    ["short meta_hash", () => encode({ ...good, meta_hash: "abcd" }), "ERR_TOKEN_MALFORMED"],
    ["non-hex meta_hash", () => encode({ ...good, meta_hash: "z".repeat(64) }), "ERR_TOKEN_MALFORMED"],
    [
      "32-byte pubkey",
      () => encode({ ...good, pub_key: Buffer.alloc(32, 2).toString("base64") }),
      "ERR_TOKEN_BAD_PUBKEY",
    ],
    [
      "65-byte pubkey",
      () => encode({ ...good, pub_key: Buffer.alloc(65, 4).toString("base64") }),
      "ERR_TOKEN_BAD_PUBKEY",
    ],
    [
      "pubkey off the curve",
      () => encode({ ...good, pub_key: Buffer.alloc(33, 5).toString("base64") }),
      "ERR_TOKEN_BAD_PUBKEY",
    ],
    [
      "63-byte signature",
      () => encode({ ...good, signature: Buffer.alloc(63, 1).toString("base64") }),
      "ERR_TOKEN_BAD_SIGNATURE",
    ],
    [
      "65-byte signature",
      () => encode({ ...good, signature: Buffer.alloc(65, 1).toString("base64") }),
      "ERR_TOKEN_BAD_SIGNATURE",
    ],
    [
      "zero signature",
      () => encode({ ...good, signature: Buffer.alloc(64).toString("base64") }),
      "ERR_TOKEN_BAD_SIGNATURE",
    ],
    [
      "URL-safe pubkey",
      () => encode({ ...good, pub_key: (good.pub_key as string).replaceAll("+", "-") }),
      "ERR_TOKEN_BAD_PUBKEY",
    ],
    [
      "non-canonical signature base64",
      () => encode({ ...good, signature: (good.signature as string).replace("IPw==", "IPx==") }),
      "ERR_TOKEN_BAD_SIGNATURE",
    ],
    [
      "URL-safe signature",
      () => encode({ ...good, signature: (good.signature as string).replaceAll("+", "-") }),
      "ERR_TOKEN_BAD_SIGNATURE",
    ],
  ];
  for (const [name, make, expected] of cases) {
    it(`refuses ${name}`, () => {
      assert.equal(
        errorCode(() => verifyTenantToken(make(), { nowMs: NOW })),
        expected,
      );
    });
  }
});

describe("tenant tokens: properties", () => {
  const keyArb = fc
    .uint8Array({ minLength: 32, maxLength: 32 })
    .filter((k) => secp256k1.utils.isValidSecretKey(k));
  const leaseArb = fc.uuid().map((u) => u.toLowerCase());
  const tsArb = fc.integer({ min: 1_600_000_000, max: 2_000_000_000 });
  const metaArb = fc.option(
    fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("hex")),
    {
      nil: undefined,
    },
  );

  it("mint → verify round-trips", () => {
    fc.assert(
      fc.property(keyArb, leaseArb, tsArb, metaArb, (key, lease, ts, meta) => {
        const token = mintTenantToken({ privateKey: key, leaseUuid: lease, timestamp: ts, metaHash: meta });
        const claims = verifyTenantToken(token, { nowMs: ts * 1000, leaseUuid: lease });
        assert.equal(claims.tenant, addressFromPubkey(compressedPubkey(key)));
        assert.equal(claims.kind, meta === undefined ? "access" : "payload");
      }),
      { numRuns: 40 },
    );
  });

  it("any single-byte change of the token text is refused unless it leaves the envelope identical", () => {
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 94 }), (at, delta) => {
        const i = at % VECTOR_TOKEN.length;
        const code = VECTOR_TOKEN.charCodeAt(i);
        const replaced = String.fromCharCode(((code - 32 + delta) % 95) + 32);
        const tampered = VECTOR_TOKEN.slice(0, i) + replaced + VECTOR_TOKEN.slice(i + 1);
        try {
          verifyTenantToken(tampered, { nowMs: NOW, leaseUuid: LEASE });
        } catch (err) {
          assert.ok(err instanceof TokenError);
          return;
        }
        // Accepted: only a change that decodes to the same claims may pass (e.g. a padding
        // slot turned into trailing JSON whitespace).
        assert.deepEqual(decode(tampered), decode(VECTOR_TOKEN));
      }),
      { numRuns: 1000 },
    );
  });

  it("any single-byte change of signature, key, timestamp, lease or meta_hash is refused", () => {
    const payload = decode(
      mintTenantToken({ privateKey: KEY, leaseUuid: LEASE, timestamp: T, metaHash: META }),
    );
    const flipByte = (b64: string, at: number, delta: number) => {
      const bytes = Buffer.from(b64, "base64");
      const i = at % bytes.length;
      bytes[i] = ((bytes[i] as number) + delta) % 256;
      return bytes.toString("base64");
    };
    const flipChar = (text: string, at: number, alphabet: string) => {
      const i = at % text.length;
      const next = alphabet[(alphabet.indexOf(text[i] as string) + 1) % alphabet.length] as string;
      return text.slice(0, i) + next + text.slice(i + 1);
    };
    fc.assert(
      fc.property(
        fc.constantFrom("signature", "pub_key", "timestamp", "lease_uuid", "meta_hash"),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (field, at, delta) => {
          const env = { ...payload };
          if (field === "signature" || field === "pub_key")
            env[field] = flipByte(env[field] as string, at, delta);
          else if (field === "timestamp") env.timestamp = T + ((at % 20) - 10 || 1);
          else if (field === "lease_uuid") env.lease_uuid = flipChar(LEASE, at % 8, "0123456789abcdef");
          else env.meta_hash = flipChar(META, at, "0123456789abcdef");
          assert.throws(() => verifyTenantToken(encode(env), { nowMs: NOW }), TokenError);
        },
      ),
      { numRuns: 300 },
    );
  });
});
