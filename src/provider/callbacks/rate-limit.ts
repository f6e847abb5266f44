import type { Clock } from "../../core/clock.ts";

/**
 * Token buckets by key (client IP before authentication, verified storage identity
 * after). `take` answers how long to wait when the bucket is empty. Idle buckets are
 * forgotten once full again, so the map stays bounded by active senders.
 */
export class RateBuckets {
  readonly #rps: number;
  readonly #burst: number;
  readonly #clock: Clock;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(rps: number, burst: number, clock: Clock) {
    this.#rps = rps;
    this.#burst = burst;
    this.#clock = clock;
  }

  /** 0 when allowed; otherwise the whole seconds to wait (for Retry-After). */
  take(key: string): number {
    const now = this.#clock.now();
    const b = this.#buckets.get(key) ?? { tokens: this.#burst, at: now };
    b.tokens = Math.min(this.#burst, b.tokens + ((now - b.at) / 1000) * this.#rps);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      this.#buckets.set(key, b);
      if (this.#buckets.size > 10_000) this.#prune();
      return 0;
    }
    this.#buckets.set(key, b);
    return Math.max(1, Math.ceil((1 - b.tokens) / this.#rps));
  }

  #prune(): void {
    const now = this.#clock.now();
    for (const [k, b] of this.#buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.#rps >= this.#burst) this.#buckets.delete(k);
    }
  }
}
