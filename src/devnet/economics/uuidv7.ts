/**
 * Deterministic chain UUIDv7 (ledger §8.1): block-time milliseconds, a 12-bit slice of the
 * namespace sequence, and an FNV-1a-64 hash of (header hash, chain id, namespace, sequence).
 * Every node computing the same block gets the same ids, which is why they are not random.
 */
const FNV_OFFSET = 14695981039346656037n;
const FNV_PRIME = 1099511628211n;
const MASK64 = (1n << 64n) - 1n;
const encoder = new TextEncoder();

export const UUID_NAMESPACE = {
  lease: "billing",
  provider: "sku-provider",
  sku: "sku-sku",
} as const;

export interface UuidV7Input {
  blockTimeMs: number;
  headerHash: Uint8Array;
  chainId: string;
  namespace: string;
  sequence: bigint;
}

/** Reference FNV-1a 64 on bigints (slow; kept to cross-check the limb version in tests). */
export function fnv1a64Reference(chunks: readonly Uint8Array[]): bigint {
  let hash = FNV_OFFSET;
  for (const chunk of chunks) {
    for (const byte of chunk) {
      hash ^= BigInt(byte);
      hash = (hash * FNV_PRIME) & MASK64;
    }
  }
  return hash;
}

/**
 * FNV-1a 64 on four 16-bit limbs (h0 lowest). The prime is 2^40 + 0x1b3, so each step is
 * h·0x1b3 + (h << 40) mod 2^64: plain float-safe integer arithmetic, ~20× faster than bigint,
 * which matters when a block creates 10,000 leases.
 */
export function fnv1a64(chunks: readonly Uint8Array[]): bigint {
  let h0 = 0x2325;
  let h1 = 0x8422;
  let h2 = 0x9ce4;
  let h3 = 0xcbf2;
  for (const chunk of chunks) {
    for (let i = 0; i < chunk.length; i++) {
      h0 ^= chunk[i]!;
      const t0 = h0 * 0x1b3;
      const t1 = h1 * 0x1b3 + (t0 >>> 16);
      const t2 = h2 * 0x1b3 + (t1 >>> 16) + ((h0 << 8) & 0xffff);
      const t3 = h3 * 0x1b3 + (t2 >>> 16) + ((h0 >>> 8) | ((h1 << 8) & 0xffff));
      h0 = t0 & 0xffff;
      h1 = t1 & 0xffff;
      h2 = t2 & 0xffff;
      h3 = t3 & 0xffff;
    }
  }
  return (BigInt(h3) << 48n) | (BigInt(h2) << 32n) | (BigInt(h1) << 16n) | BigInt(h0);
}

function uint64Be(value: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, value & MASK64);
  return out;
}

export function deterministicUuidV7(input: UuidV7Input): string {
  const bytes = new Uint8Array(16);
  let ms = BigInt(input.blockTimeMs);
  for (let i = 5; i >= 0; i--) {
    bytes[i] = Number(ms & 0xffn);
    ms >>= 8n;
  }
  const seq = input.sequence;
  bytes[6] = 0x70 | Number((seq >> 8n) & 0x0fn);
  bytes[7] = Number(seq & 0xffn);
  const hash = fnv1a64([
    input.headerHash,
    encoder.encode(input.chainId),
    encoder.encode(input.namespace),
    uint64Be(seq),
  ]);
  bytes[8] = 0x80 | Number((hash >> 56n) & 0x3fn);
  for (let i = 0; i < 7; i++) bytes[9 + i] = Number((hash >> BigInt(8 * (6 - i))) & 0xffn);
  const hex = Buffer.from(bytes).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID_V7_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Lowercase canonical UUIDv7, as the chain's batch rules demand. */
export function isUuidV7(value: string): boolean {
  return UUID_V7_RE.test(value);
}
