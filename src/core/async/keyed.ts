import { LRUCache } from "lru-cache";
import type { Clock } from "../clock.ts";

/**
 * Work grouped by a key (a lease UUID, a tenant address, a client IP, a query): how it
 * waits or is refused. `KeyedMutex` runs one task per key at a time; `Admission` lets a
 * bounded number of keys start at once and holds the rest as bare keys; `Coalescer` lets
 * callers asking for the same key share one load; `RateBuckets` refuses a key that sends
 * faster than its budget.
 */

/**
 * The one keyed mutex: work under the same key (a lease UUID, a tenant address) runs one
 * task at a time in submission order; work under different keys runs concurrently. A task
 * that fails never blocks the tasks queued behind it. It carries no state beyond the queue.
 */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();
  #pending = 0;

  /** Runs `work` once every earlier task of `key` has settled; resolves with its result. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    this.#pending++;
    const result = previous.then(work);
    const tail: Promise<void> = result.then(
      () => this.#settle(key, tail),
      () => this.#settle(key, tail),
    );
    this.#tails.set(key, tail);
    return result;
  }

  /** Runs `work` only when nobody holds or waits for `key`; resolves false otherwise. */
  async tryRun(key: string, work: () => Promise<void>): Promise<boolean> {
    if (this.#tails.has(key)) return false;
    await this.run(key, work);
    return true;
  }

  /** True while `key` has a task running or queued. */
  isBusy(key: string): boolean {
    return this.#tails.has(key);
  }

  /** Tasks queued or running, over every key. */
  get depth(): number {
    return this.#pending;
  }

  /** Keys with queued or running work. */
  get activeKeys(): number {
    return this.#tails.size;
  }

  /** Resolves once every task queued so far (and any queued meanwhile) has settled. */
  async idle(): Promise<void> {
    while (this.#tails.size > 0) await Promise.allSettled([...this.#tails.values()]);
  }

  #settle(key: string, tail: Promise<void>): void {
    this.#pending--;
    if (this.#tails.get(key) === tail) this.#tails.delete(key);
  }
}

/**
 * Work waiting for one of `limit` slots, first come first served, at most one entry per
 * key. A waiting entry is one map entry: nothing of its work exists until its slot comes
 * up. A block of 10,000 new leases started as 10,000 workflows at once holds 10,000 sets
 * of suspended frames, promises and timers while almost all of them wait; here it holds
 * 10,000 keys.
 *
 * `start` is called with a `release` callback that gives the slot back (idempotent). The
 * work decides when that is: the lifecycle releases when a lease's first try ends, so a
 * lease that backs off before retrying does not keep others waiting.
 */
export class Admission<T> {
  readonly #waiting = new Map<string, T>();
  readonly #limit: number;
  readonly #start: (key: string, value: T, release: () => void) => void;
  #admitted = 0;
  #admitting = false;

  constructor(limit: number, start: (key: string, value: T, release: () => void) => void) {
    if (!(limit >= 1)) throw new RangeError(`admission limit must be at least 1, got ${limit}`);
    this.#limit = limit;
    this.#start = start;
  }

  /** Queues `key`, or starts it at once when a slot is free. False if it already waits (the first value stands). */
  add(key: string, value: T): boolean {
    if (this.#waiting.has(key)) return false;
    this.#waiting.set(key, value);
    this.#admitNext();
    return true;
  }

  /** True while `key` waits for a slot. */
  has(key: string): boolean {
    return this.#waiting.has(key);
  }

  /** Drops `key` if it is still waiting (true); work already started is not affected. */
  remove(key: string): boolean {
    return this.#waiting.delete(key);
  }

  /** Drops every waiting entry (on shutdown); started work is not affected. */
  clear(): void {
    this.#waiting.clear();
  }

  /** Entries waiting for a slot. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Slots in use. */
  get admitted(): number {
    return this.#admitted;
  }

  #admitNext(): void {
    // A release called from inside `start` must not recurse: the loop below picks it up.
    if (this.#admitting) return;
    this.#admitting = true;
    try {
      while (this.#admitted < this.#limit) {
        const next = this.#waiting.entries().next();
        if (next.done === true) return;
        const [key, value] = next.value;
        this.#waiting.delete(key);
        this.#admitted++;
        let released = false;
        const release = () => {
          if (released) return;
          released = true;
          this.#admitted--;
          this.#admitNext();
        };
        try {
          this.#start(key, value, release);
        } catch (err) {
          release();
          throw err;
        }
      }
    } finally {
      this.#admitting = false;
    }
  }
}

/**
 * The one coalescing helper: concurrent callers asking for the same key share one
 * in-flight load, and a settled value may be reused for `ttlMs` (0 = only while in
 * flight; a function of the value lets a settled answer live longer than a transitional
 * one). A failed load is never cached, so an error can never become a cached answer.
 */
/** How long a settled value is reused: fixed, or chosen per value (and key). */
export type Ttl<V> = number | ((value: V, key: string) => number);

export class Coalescer<V> {
  readonly #inflight = new Map<string, Promise<V>>();
  readonly #cache = new Map<string, { value: V; until: number }>();
  readonly #clock: Clock;
  readonly #ttlMs: Ttl<V>;
  readonly #maxEntries: number;

  constructor(opts: { clock: Clock; ttlMs?: Ttl<V>; maxEntries?: number }) {
    this.#clock = opts.clock;
    this.#ttlMs = opts.ttlMs ?? 0;
    this.#maxEntries = opts.maxEntries ?? 10_000;
  }

  /** `ttlMs` overrides the constructor's for the answer of a load this call starts. */
  get(key: string, load: () => Promise<V>, ttlMs: Ttl<V> = this.#ttlMs): Promise<V> {
    const cached = this.#cache.get(key);
    if (cached !== undefined) {
      if (cached.until > this.#clock.now()) return Promise.resolve(cached.value);
      this.#cache.delete(key);
    }
    const running = this.#inflight.get(key);
    if (running !== undefined) return running;
    const p: Promise<V> = load().then(
      (value) => {
        // Only the load still registered for its key may cache: one detached by invalidate()
        // or clear() may hold what they were meant to drop.
        if (this.#inflight.get(key) === p) {
          this.#inflight.delete(key);
          const ttl = typeof ttlMs === "number" ? ttlMs : ttlMs(value, key);
          if (ttl > 0) this.#remember(key, value, ttl);
        }
        return value;
      },
      (err: unknown) => {
        if (this.#inflight.get(key) === p) this.#inflight.delete(key);
        throw err;
      },
    );
    this.#inflight.set(key, p);
    return p;
  }

  /**
   * The key's cached value while it is still fresh, without starting a load (or a promise);
   * undefined when none is. For a Coalescer whose values may themselves be undefined, use get.
   */
  peek(key: string): V | undefined {
    const cached = this.#cache.get(key);
    return cached !== undefined && cached.until > this.#clock.now() ? cached.value : undefined;
  }

  /**
   * Forgets the key's cached value and detaches a load already running for it (it still
   * answers its own callers, but is neither shared nor cached): the next `get` loads afresh.
   */
  invalidate(key: string): void {
    this.#cache.delete(key);
    this.#inflight.delete(key);
  }

  /**
   * Detaches every load running now (each still answers its own callers, but is neither
   * shared nor cached); what is cached stays.
   */
  detachRunning(): void {
    this.#inflight.clear();
  }

  /** As invalidate(), for every key: what was true before the clear may no longer be. */
  clear(): void {
    this.#cache.clear();
    this.#inflight.clear();
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

  /** Spends `cost` tokens (one by default: a request; bytes for a byte rate) of `key`'s bucket when it holds them. */
  consume(key: string, cost = 1): BucketVerdict {
    const b = this.#refilled(key);
    const allowed = b.tokens >= cost;
    if (allowed) b.tokens -= cost;
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

  /**
   * Spends `cost` tokens even past empty, the bucket going into debt: for what was already
   * received and must be paced, not refused (a shell's output). Returns the milliseconds
   * until the debt is paid (0 when there is none), for the caller to pause that long.
   */
  spend(key: string, cost: number): number {
    const b = this.#refilled(key);
    b.tokens -= cost;
    return b.tokens >= 0 ? 0 : Math.ceil((-b.tokens / this.rps) * 1000);
  }

  /** `key`'s bucket with the tokens earned since it was last used (full when new or idle). */
  #refilled(key: string): { tokens: number; at: number } {
    const now = this.#clock.now();
    let b = this.#buckets.get(key);
    if (b === undefined || now - b.at > this.#idleMs) b = { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rps);
    b.at = now;
    this.#buckets.set(key, b);
    return b;
  }
}
