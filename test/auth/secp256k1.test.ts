import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import fc from "fast-check";
import { compressedPubkey } from "../../src/auth/keys.ts";
import {
  parseSecp256k1PublicKey,
  SECP256K1_VERIFIER,
  verifySecp256k1,
  verifyWithLibsecp256k1,
  verifyWithOpenssl,
} from "../../src/auth/secp256k1.ts";
import { normalizeLowS } from "../../src/auth/token.ts";

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const hex32 = (n: bigint) => Buffer.from(n.toString(16).padStart(64, "0"), "hex");

/** A signature by `secret` over SHA-256(message), as 64 bytes r‖s with low S. */
function sign(secret: Uint8Array, message: Uint8Array): Buffer {
  return Buffer.from(secp256k1.sign(message, secret, { format: "compact" }));
}

/** The same signature with S replaced by N − S (the high-S twin). */
function highS(sig: Buffer): Buffer {
  const s = BigInt(`0x${sig.subarray(32).toString("hex")}`);
  return Buffer.concat([sig.subarray(0, 32), hex32(N - s)]);
}

describe("secp256k1 signature checks", () => {
  it("uses libsecp256k1 on linux-x64, where the addon is prebuilt (not a silent fallback)", {
    skip: process.platform !== "linux" || process.arch !== "x64",
  }, () => {
    assert.equal(SECP256K1_VERIFIER, "libsecp256k1");
  });

  it("libsecp256k1 and OpenSSL give the same answer for valid, tampered and out-of-range signatures", () => {
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
    console.log(`secp256k1 differential seed: ${seed}`);
    const secret = fc
      .uint8Array({ minLength: 32, maxLength: 32 })
      .filter((k) => secp256k1.utils.isValidSecretKey(k));
    const mutation = fc.constantFrom(
      "none",
      "message",
      "r-bit",
      "s-bit",
      "other-key",
      "r-zero",
      "s-zero",
      "r-order",
      "s-order",
      "s-above-order",
      "high-s-normalised",
    );
    let valid = 0;
    fc.assert(
      fc.property(secret, secret, fc.uint8Array({ maxLength: 300 }), mutation, (key, other, message, how) => {
        const good = sign(key, message);
        let sig: Buffer = Buffer.from(good);
        let signer = Buffer.from(compressedPubkey(key));
        let msg: Buffer = Buffer.from(message);
        if (how === "message") msg = Buffer.concat([msg, Buffer.from([1])]);
        if (how === "r-bit") sig[5] = (sig[5] ?? 0) ^ 0x10;
        if (how === "s-bit") sig[40] = (sig[40] ?? 0) ^ 0x01;
        if (how === "other-key") signer = Buffer.from(compressedPubkey(other));
        if (how === "r-zero") sig.fill(0, 0, 32);
        if (how === "s-zero") sig.fill(0, 32, 64);
        if (how === "r-order") hex32(N).copy(sig, 0);
        if (how === "s-order") hex32(N).copy(sig, 32);
        if (how === "s-above-order") hex32(N + 5n).copy(sig, 32);
        if (how === "high-s-normalised") sig = normalizeLowS(highS(good));
        const pub = parseSecp256k1PublicKey(signer);
        const expected =
          how === "none" ||
          how === "high-s-normalised" ||
          (how === "other-key" && signer.equals(compressedPubkey(key)));
        const openssl = verifyWithOpenssl(msg, sig, pub);
        assert.equal(openssl, expected, `OpenSSL, ${how}`);
        assert.equal(verifySecp256k1(msg, sig, pub), expected, `the verifier in use, ${how}`);
        const lib = verifyWithLibsecp256k1(msg, sig, pub);
        if (lib !== undefined) assert.equal(lib, openssl, `libsecp256k1 against OpenSSL, ${how}`);
        if (expected) valid++;
      }),
      { seed, numRuns: 400 },
    );
    assert.ok(valid > 0, "no valid signature was generated");
  });

  it("a high S is refused by libsecp256k1 and taken by OpenSSL: callers normalise first", {
    skip: SECP256K1_VERIFIER !== "libsecp256k1",
  }, () => {
    const key = Buffer.alloc(32, 7);
    const message = Buffer.from("manifest");
    const high = highS(sign(key, message));
    const pub = parseSecp256k1PublicKey(Buffer.from(compressedPubkey(key)));
    assert.equal(verifyWithOpenssl(message, high, pub), true);
    assert.equal(verifyWithLibsecp256k1(message, high, pub), false);
    assert.equal(verifySecp256k1(message, normalizeLowS(high), pub), true);
  });

  it("refuses a key that is not a point on the curve, and one of the wrong length", () => {
    const notOnCurve = Buffer.concat([Buffer.from([2]), hex32(5n)]);
    assert.throws(() => parseSecp256k1PublicKey(notOnCurve));
    assert.throws(() => parseSecp256k1PublicKey(Buffer.alloc(32, 2)), /33 bytes/);
  });
});
