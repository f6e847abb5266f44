import { USAGE_HISTORY_METRICS } from "../../../core/backend-contract/index.ts";

/**
 * The last `capacity` samples of one instance, oldest overwritten first. Kept in one flat
 * Float64Array (each sample's time, then the history metrics side by side), so a full ring
 * costs a fixed `capacity × 8 × (1 + metrics)` bytes however long the backend runs: at 360
 * samples (an hour at 10 s) that is 17,280 bytes per instance. A new ring starts at
 * INITIAL_SLOTS samples and doubles as they come, so a lease sampled a few times holds a
 * few hundred bytes: a burst of new leases no longer allocates and zero-fills 17 KB each
 * (86 MB for 5,000 leases) before the hour that fills them. NaN stands for "not known".
 */
const WIDTH = USAGE_HISTORY_METRICS.length;
const STRIDE = 1 + WIDTH;
const INITIAL_SLOTS = 8;

export class SampleRing {
  #data: Float64Array;
  #next = 0;
  #size = 0;

  constructor(readonly capacity: number) {
    this.#data = new Float64Array(Math.min(capacity, INITIAL_SLOTS) * STRIDE);
  }

  /** `values` in USAGE_HISTORY_METRICS order; undefined is stored as NaN. */
  push(atMs: number, values: readonly (number | undefined)[]): void {
    // Until the ring is full it has never wrapped: samples sit at 0..size-1, so growing is one copy.
    if (this.#size * STRIDE === this.#data.length && this.#size < this.capacity) {
      const grown = new Float64Array(Math.min(this.capacity, this.#size * 2) * STRIDE);
      grown.set(this.#data);
      this.#data = grown;
    }
    const base = this.#next * STRIDE;
    this.#data[base] = atMs;
    for (let m = 0; m < WIDTH; m++) this.#data[base + 1 + m] = values[m] ?? Number.NaN;
    this.#next = (this.#next + 1) % this.capacity;
    this.#size = Math.min(this.#size + 1, this.capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Oldest first: the sample's time and its value of metric `m` (NaN when not known). */
  *samples(): Generator<{ atMs: number; value: (m: number) => number }> {
    const start = (this.#next - this.#size + this.capacity) % this.capacity;
    const data = this.#data;
    for (let i = 0; i < this.#size; i++) {
      const base = ((start + i) % this.capacity) * STRIDE;
      yield { atMs: data[base] as number, value: (m) => data[base + 1 + m] as number };
    }
  }

  /** Bytes this ring holds now (at most `ringBytes(capacity)`). */
  get bytes(): number {
    return this.#data.byteLength;
  }
}

/** Bytes a full ring holds (the figure docs/backend-contract.md states). */
export const ringBytes = (capacity: number): number => capacity * 8 * STRIDE;
