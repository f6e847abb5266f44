/**
 * Tenant-token and HMAC verification rates. The token figure is printed beside the raw
 * signature checks of the candidate libraries, measured in the same run: OpenSSL
 * (node:crypto, the reference), libsecp256k1 (the `secp256k1` addon, which
 * src/auth/secp256k1.ts uses where it loads) and @noble/curves (pure JavaScript, already a
 * dependency for signing). Rates are per CPU-second of this process.
 */
import { createHash, createPublicKey, verify } from "node:crypto";
import { loadavg } from "node:os";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { addressFromPubkey } from "../src/auth/address.ts";
import { hmacSecret, signRequest, verifyRequest } from "../src/auth/hmac.ts";
import { compressedPubkey } from "../src/auth/keys.ts";
import {
  parseSecp256k1PublicKey,
  SECP256K1_VERIFIER,
  verifyWithLibsecp256k1,
} from "../src/auth/secp256k1.ts";
import {
  adr036SignDoc,
  mintTenantToken,
  verifyTenantToken,
  verifyTenantTokenUncached,
} from "../src/auth/token.ts";

/** Calls of `fn` per CPU-second (user + system of this process) over about `seconds`. */
function rate(label: string, fn: () => void, seconds = 2): number {
  for (let i = 0; i < 500; i++) fn();
  let ops = 0;
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const budget = BigInt(Math.round(seconds * 1e9));
  while (process.hrtime.bigint() - start < budget) {
    for (let i = 0; i < 100; i++) fn();
    ops += 100;
  }
  const used = process.cpuUsage(cpu);
  const perSecond = ops / ((used.user + used.system) / 1e6);
  process.stderr.write(`${label}: ${Math.round(perSecond)}/CPU-s\n`);
  return perSecond;
}

const key = Buffer.from("8f7f28ced235ea1050d4f484312892104ba52a2fa8e8e631b431b3dc77e61d95", "hex");
const lease = "0190f3a2-7c1e-7000-8000-000000000001";
const timestamp = Math.floor(Date.now() / 1000);
const token = mintTenantToken({ privateKey: key, leaseUuid: lease, timestamp });
const nowMs = timestamp * 1000;

// The same signature checked with Node's crypto and nothing else: the ceiling.
const envelope = JSON.parse(Buffer.from(token, "base64").toString());
const pub = compressedPubkey(key);
const spki = Buffer.concat([Buffer.from("3036301006072a8648ce3d020106052b8104000a032200", "hex"), pub]);
const keyObject = createPublicKey({ key: spki, format: "der", type: "spki" });
const doc = Buffer.from(adr036SignDoc(addressFromPubkey(pub), `${envelope.tenant}:${lease}:${timestamp}`));
const sig = Buffer.from(envelope.signature, "base64");
if (!verify("sha256", doc, { key: keyObject, dsaEncoding: "ieee-p1363" }, sig))
  throw new Error("raw verify failed");
const parsed = parseSecp256k1PublicKey(Buffer.from(pub));
const libsecp = () => verifyWithLibsecp256k1(doc, sig, parsed);
const noble = () => secp256k1.verify(sig, createHash("sha256").update(doc).digest(), pub, { prehash: false });
if (!noble()) throw new Error("noble verify failed");
if (libsecp() === false) throw new Error("libsecp256k1 verify failed");

// Alternate short rounds so background load hits both measurements alike; keep medians.
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const raws: number[] = [];
const libsecps: number[] = [];
const tokenRates: number[] = [];
for (let round = 0; round < 5; round++) {
  if (SECP256K1_VERIFIER === "libsecp256k1") libsecps.push(rate("raw libsecp256k1 verify", libsecp, 0.6));
  raws.push(
    rate(
      "raw crypto.verify",
      () => verify("sha256", doc, { key: keyObject, dsaEncoding: "ieee-p1363" }, sig),
      0.6,
    ),
  );
  // The full check every time: the figure is the verify's, not the verified-token cache's.
  tokenRates.push(
    rate("token verify", () => verifyTenantTokenUncached(token, { nowMs, leaseUuid: lease }), 0.6),
  );
}
const raw = median(raws);
const rawLibsecp = libsecps.length > 0 ? median(libsecps) : undefined;
const tokens = median(tokenRates);
const nobleRate = rate("raw @noble/curves verify", noble, 1);
const inUse = rawLibsecp ?? raw;
console.log(
  JSON.stringify({
    bench: "token_verify",
    verifier: SECP256K1_VERIFIER,
    token_verifications_per_cpu_s: Math.round(tokens),
    raw_native_verify_per_cpu_s: Math.round(raw),
    raw_libsecp256k1_verify_per_cpu_s: rawLibsecp === undefined ? null : Math.round(rawLibsecp),
    raw_noble_curves_verify_per_cpu_s: Math.round(nobleRate),
    ratio_to_verifier_in_use: Number((tokens / inUse).toFixed(3)),
    ratio_to_openssl: Number((tokens / raw).toFixed(3)),
    goal_ratio: 0.8,
    load1: Number(loadavg()[0]!.toFixed(2)),
  }),
);

// The same token again, as a client polling with one token presents it: a cache hit.
const remembered = rate("remembered token", () => verifyTenantToken(token, { nowMs, leaseUuid: lease }), 0.6);
console.log(
  JSON.stringify({ bench: "token_verify_remembered", verifications_per_s: Math.round(remembered) }),
);

const secret = hmacSecret("0123456789abcdef0123456789abcdef");
const body = JSON.stringify({ lease_uuid: lease, status: "success", backend: "mock" });
const uri = `/callbacks/provision?operation_id=${crypto.randomUUID()}`;
const header = signRequest(secret, { method: "POST", uri, body, timestamp });
const hmac = rate("hmac verify", () => {
  verifyRequest({ header, method: "POST", uri, body, nowMs, secrets: [secret] });
});
console.log(
  JSON.stringify({ bench: "hmac_verify", hmac_verifications_per_s: Math.round(hmac), goal_per_s: 100_000 }),
);
