import { secp256k1 } from "@noble/curves/secp256k1.js";
import { mintTenantToken } from "../../../src/auth/token.ts";

/**
 * What a tenant holding only a wallet key sends: ADR-036 tokens (a fresh timestamp for
 * each replay-protected call, since a token is spent on first use) and plain fetches.
 */
export class TenantKey {
  readonly privateKey: Uint8Array;
  #last = 0;

  constructor(privateKeyHex: string) {
    this.privateKey = Buffer.from(privateKeyHex, "hex");
  }

  /**
   * A timestamp never used before by this key: counts up from 25 s ago, so many tokens
   * minted within one second all stay inside the 30 s / +10 s window and differ.
   */
  freshTimestamp(): number {
    const now = Math.floor(Date.now() / 1000);
    this.#last = Math.max(this.#last + 1, now - 25);
    if (this.#last > now + 9) throw new Error("too many tokens in too little time");
    return this.#last;
  }

  /** An access token stamped now: reusable on the endpoints without replay protection. */
  access(leaseUuid: string, timestamp = Math.floor(Date.now() / 1000)): string {
    return mintTenantToken({ privateKey: this.privateKey, leaseUuid, timestamp });
  }

  /** An access token never minted before: for the replay-protected endpoints. */
  fresh(leaseUuid: string): string {
    return this.access(leaseUuid, this.freshTimestamp());
  }

  payload(leaseUuid: string, metaHash: string, timestamp = Math.floor(Date.now() / 1000)): string {
    return mintTenantToken({ privateKey: this.privateKey, leaseUuid, timestamp, metaHash });
  }
}

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  text: string;
}

export async function call(
  base: string,
  path: string,
  token: string | undefined,
  init: RequestInit = {},
): Promise<Answer> {
  const headers = new Headers(init.headers);
  if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
  const res = await fetch(`${base}${path}`, { ...init, headers });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    body = {};
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** The same token with its signature's S replaced by n − S (the high-S twin). */
export function highS(token: string): string {
  const envelope = JSON.parse(Buffer.from(token, "base64").toString()) as Record<string, unknown>;
  const sig = Buffer.from(envelope.signature as string, "base64");
  const n = secp256k1.Point.CURVE().n;
  const s = BigInt(`0x${sig.subarray(32).toString("hex")}`);
  sig.write((n - s).toString(16).padStart(64, "0"), 32, "hex");
  envelope.signature = sig.toString("base64");
  return Buffer.from(JSON.stringify(envelope)).toString("base64");
}

/** The token with one envelope field replaced, signature untouched. */
export function tampered(token: string, field: string, value: unknown): string {
  const envelope = JSON.parse(Buffer.from(token, "base64").toString()) as Record<string, unknown>;
  envelope[field] = value;
  return Buffer.from(JSON.stringify(envelope)).toString("base64");
}

/** Asserts the documented error envelope and returns it. */
export function envelope(a: Answer): { error: string; code: number; reason?: string } {
  const b = a.body as { error?: unknown; code?: unknown; reason?: unknown };
  if (typeof b.error !== "string" || b.error === "" || b.code !== a.status) {
    throw new Error(`not the error envelope for ${a.status}: ${a.text}`);
  }
  const allowed = new Set(["error", "code", "reason"]);
  for (const k of Object.keys(b)) if (!allowed.has(k)) throw new Error(`unexpected field ${k}: ${a.text}`);
  return b as { error: string; code: number; reason?: string };
}
