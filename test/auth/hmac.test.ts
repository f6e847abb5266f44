import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  HmacError,
  hmacSecret,
  parseSignatureHeader,
  signRequest,
  verifyRequest,
} from "../../src/auth/hmac.ts";

const secret = hmacSecret("0123456789abcdef0123456789abcdef");
const T = 1735689600;
const nowMs = T * 1000;
const callbackBody =
  '{"lease_uuid":"0190f3a2-7c1e-7000-8000-000000000001","status":"success","backend":"docker"}';

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof HmacError, `expected HmacError, got ${String(err)}`);
    return err.code;
  }
  assert.fail("expected an HmacError");
}

describe("HMAC X-Fred-Signature", () => {
  it("matches the fred-wire §2.6 vectors", () => {
    assert.equal(
      signRequest(secret, { method: "POST", uri: "/callbacks/provision", body: callbackBody, timestamp: T }),
      "t=1735689600,sha256=05501e6439226b87b8f24cb493e1b7777dc2febcba65691b2bcc1980c7d08963",
    );
    assert.equal(
      signRequest(secret, { method: "GET", uri: "/info/0190f3a2-7c1e-7000-8000-000000000001", timestamp: T }),
      "t=1735689600,sha256=6f928cb125cb22f1043619eb7e822c635bba5ebe2aea8fa76bd2bc91b06c455f",
    );
  });

  it("verifies its own signature and reports which key matched", () => {
    const header = signRequest(secret, { method: "POST", uri: "/x?a=1", body: "{}", timestamp: T });
    assert.equal(
      verifyRequest({ header, method: "POST", uri: "/x?a=1", body: "{}", nowMs, secrets: [secret] }),
      0,
    );
    const previous = hmacSecret("p".repeat(32));
    const old = signRequest(previous, { method: "POST", uri: "/x", body: "{}", timestamp: T });
    assert.equal(
      verifyRequest({
        header: old,
        method: "POST",
        uri: "/x",
        body: "{}",
        nowMs,
        secrets: [secret, previous],
      }),
      1,
    );
  });

  it("refuses missing, malformed, tampered, stale, future and wrong-key signatures", () => {
    const header = signRequest(secret, { method: "POST", uri: "/x?a=1", body: "{}", timestamp: T });
    const base = { header, method: "POST", uri: "/x?a=1", body: "{}", nowMs, secrets: [secret] };
    assert.equal(
      code(() => verifyRequest({ ...base, header: undefined })),
      "ERR_HMAC_MISSING",
    );
    assert.equal(
      code(() => verifyRequest({ ...base, header: "sha256=00,t=1" })),
      "ERR_HMAC_MALFORMED",
    );
    assert.equal(
      code(() => verifyRequest({ ...base, header: "t=1.5,sha256=" + "0".repeat(64) })),
      "ERR_HMAC_MALFORMED",
    );
    assert.equal(
      code(() => verifyRequest({ ...base, header: `t=${T},sha256=abc` })),
      "ERR_HMAC_MALFORMED",
    );
    assert.equal(
      code(() => verifyRequest({ ...base, body: "{ }" })),
      "ERR_HMAC_MISMATCH",
    );
    assert.equal(
      code(() => verifyRequest({ ...base, uri: "/x?a=2" })),
      "ERR_HMAC_MISMATCH",
    );
    assert.equal(
      code(() => verifyRequest({ ...base, method: "GET" })),
      "ERR_HMAC_MISMATCH",
    );
    assert.equal(
      code(() => verifyRequest({ ...base, secrets: [hmacSecret("q".repeat(32))] })),
      "ERR_HMAC_MISMATCH",
    );
    assert.equal(
      code(() => verifyRequest({ ...base, nowMs: nowMs + 5 * 60_000 + 1 })),
      "ERR_HMAC_STALE",
    );
    assert.equal(verifyRequest({ ...base, nowMs: nowMs + 5 * 60_000 }), 0);
    assert.equal(
      code(() => verifyRequest({ ...base, nowMs: nowMs - 60_001 })),
      "ERR_HMAC_FUTURE",
    );
  });

  it("accepts upper-case hex and surrounding spaces, as the Go parser does", () => {
    const header = signRequest(secret, { method: "GET", uri: "/a", timestamp: T });
    const [t, mac] = header.split(",") as [string, string];
    const loose = ` ${t} , ${mac.toUpperCase().replace("SHA256=", "sha256=")} `;
    assert.equal(verifyRequest({ header: loose, method: "GET", uri: "/a", nowMs, secrets: [secret] }), 0);
    assert.equal(parseSignatureHeader(loose).timestamp, T);
  });

  it("verifies behind a canonical path prefix", () => {
    const header = signRequest(secret, {
      method: "POST",
      uri: "/fred/callbacks/provision?operation_id=x",
      timestamp: T,
    });
    const input = {
      header,
      method: "POST",
      uri: "/callbacks/provision?operation_id=x",
      nowMs,
      secrets: [secret],
    };
    assert.equal(
      code(() => verifyRequest(input)),
      "ERR_HMAC_MISMATCH",
    );
    assert.equal(verifyRequest({ ...input, canonicalPathPrefix: "/fred" }), 0);
  });

  it("refuses secrets shorter than 32 bytes", () => {
    assert.equal(
      code(() => hmacSecret("x".repeat(31))),
      "ERR_HMAC_WEAK_SECRET",
    );
  });

  it("rejects any single-byte change of the body (property)", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 256 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (body, at, delta) => {
          const header = signRequest(secret, { method: "POST", uri: "/p", body, timestamp: T });
          const changed = Uint8Array.from(body);
          const i = at % changed.length;
          changed[i] = ((changed[i] as number) + delta) % 256;
          assert.equal(
            code(() =>
              verifyRequest({ header, method: "POST", uri: "/p", body: changed, nowMs, secrets: [secret] }),
            ),
            "ERR_HMAC_MISMATCH",
          );
        },
      ),
    );
  });
});
