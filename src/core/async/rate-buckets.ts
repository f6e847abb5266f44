import { LRUCache } from "lru-cache";
import type { Clock } from "../clock.ts";

/**
 * Token buckets by key (a client IP, a tenant address, a verified backend storage
 * identity): `rps` tokens a second up to `burst`. At most `maxKeys` buckets are kept,
 * the least recently used forgotten first, and each one is forgotten after `idleMs`
 * without use (a forgotten bucket starts full again), so memory is bounded whatever the
 * number of senders. A burst of 0 refuses every request.
 */
export interface BucketVerdict {
  allowed: boolean;
  /** The bucket's size (RateLimit-Limit). */
  limit: number;
  /** Whole tokens left after this request (RateLimit-Remaining). */
  remaining: number;
  /** Seconds until the bucket is full again (RateLimit-Reset). */
  resetSeconds: number;
  /** When refused: whole seconds until one token is back (Retry-After, at least 1). */
  retryAfterSeconds: number;
}

export interface RateBucketsOptions {
  maxKeys?: number;
  idleMs?: number;
}

export class RateBuckets {
  readonly rps: number;
  readonly burst: number;
  readonly #clock: Clock;
  readonly #buckets: LRUCache<string, { tokens: number; at: number }>;
  readonly #idleMs: number;

  constructor(rps: number, burst: number, clock: Clock, opts: RateBucketsOptions = {}) {
    this.rps = rps;
    this.burst = burst;
    this.#clock = clock;
    this.#buckets = new LRUCache({ max: opts.maxKeys ?? 10_000 });
    this.#idleMs = opts.idleMs ?? 3 * 60_000;
  }

  /** Spends one token of `key`'s bucket when there is one. */
  consume(key: string): BucketVerdict {
    const now = this.#clock.now();
    let b = this.#buckets.get(key);
    if (b === undefined || now - b.at > this.#idleMs) b = { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rps);
    b.at = now;
    const allowed = b.tokens >= 1;
    if (allowed) b.tokens -= 1;
    this.#buckets.set(key, b);
    return {
      allowed,
      limit: this.burst,
      remaining: Math.floor(b.tokens),
      resetSeconds: Math.ceil((this.burst - b.tokens) / this.rps),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / this.rps)),
    };
  }

  /** 0 when allowed; otherwise the whole seconds to wait (for Retry-After). */
  take(key: string): number {
    return this.consume(key).retryAfterSeconds;
  }
}
