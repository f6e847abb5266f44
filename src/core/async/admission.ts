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
