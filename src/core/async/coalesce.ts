import type { Clock } from "../clock.ts";

/**
 * The one coalescing helper: concurrent callers asking for the same key share one
 * in-flight load, and a settled value may be reused for `ttlMs` (0 = only while in
 * flight). A failed load is never cached, so an error can never become a cached answer.
 */
export class Coalescer<V> {
  readonly #inflight = new Map<string, Promise<V>>();
  readonly #cache = new Map<string, { value: V; until: number }>();
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  #generation = 0;

  constructor(opts: { clock: Clock; ttlMs?: number; maxEntries?: number }) {
    this.#clock = opts.clock;
    this.#ttlMs = opts.ttlMs ?? 0;
    this.#maxEntries = opts.maxEntries ?? 10_000;
  }

  /** `ttlMs` overrides the constructor's for the answer of a load this call starts. */
  get(key: string, load: () => Promise<V>, ttlMs = this.#ttlMs): Promise<V> {
    const cached = this.#cache.get(key);
    if (cached !== undefined) {
      if (cached.until > this.#clock.now()) return Promise.resolve(cached.value);
      this.#cache.delete(key);
    }
    const running = this.#inflight.get(key);
    if (running !== undefined) return running;
    const generation = this.#generation;
    const settle = () => {
      if (this.#inflight.get(key) === p) this.#inflight.delete(key);
    };
    const p: Promise<V> = load().then(
      (value) => {
        settle();
        // A load that began before clear() may hold what clear() was meant to drop.
        if (ttlMs > 0 && generation === this.#generation) this.#remember(key, value, ttlMs);
        return value;
      },
      (err: unknown) => {
        settle();
        throw err;
      },
    );
    this.#inflight.set(key, p);
    return p;
  }

  /** Forgets a cached value (the next `get` loads again). */
  invalidate(key: string): void {
    this.#cache.delete(key);
  }

  /**
   * Forgets every cached value, and keeps loads already running from caching theirs (they
   * still answer their own callers): what was true before the clear may no longer be.
   */
  clear(): void {
    this.#cache.clear();
    this.#inflight.clear();
    this.#generation++;
  }

  /** Loads in flight (a gauge for bounded-concurrency checks). */
  get inflight(): number {
    return this.#inflight.size;
  }

  #remember(key: string, value: V, ttlMs: number): void {
    if (this.#cache.size >= this.#maxEntries) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    this.#cache.set(key, { value, until: this.#clock.now() + ttlMs });
  }
}
