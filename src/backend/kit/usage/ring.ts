import { USAGE_HISTORY_METRICS } from "../../../core/backend-contract/index.ts";

/**
 * The last `capacity` samples of one instance, oldest overwritten first. Kept in two flat
 * Float64Arrays (time, and the history metrics side by side) so a ring costs a fixed
 * `capacity × 8 × (1 + metrics)` bytes however long the backend runs: at 360 samples
 * (an hour at 10 s) that is 17,280 bytes per instance. NaN stands for "not known".
 */
const WIDTH = USAGE_HISTORY_METRICS.length;

export class SampleRing {
  readonly #at: Float64Array;
  readonly #values: Float64Array;
  #next = 0;
  #size = 0;

  constructor(readonly capacity: number) {
    this.#at = new Float64Array(capacity);
    this.#values = new Float64Array(capacity * WIDTH);
  }

  /** `values` in USAGE_HISTORY_METRICS order; undefined is stored as NaN. */
  push(atMs: number, values: readonly (number | undefined)[]): void {
    this.#at[this.#next] = atMs;
    for (let m = 0; m < WIDTH; m++) this.#values[this.#next * WIDTH + m] = values[m] ?? Number.NaN;
    this.#next = (this.#next + 1) % this.capacity;
    this.#size = Math.min(this.#size + 1, this.capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Oldest first: the sample's time and its value of metric `m` (NaN when not known). */
  *samples(): Generator<{ atMs: number; value: (m: number) => number }> {
    const start = (this.#next - this.#size + this.capacity) % this.capacity;
    for (let i = 0; i < this.#size; i++) {
      const slot = (start + i) % this.capacity;
      yield { atMs: this.#at[slot] as number, value: (m) => this.#values[slot * WIDTH + m] as number };
    }
  }
}

/** Bytes one instance's ring holds (the figure docs/backend-contract.md states). */
export const ringBytes = (capacity: number): number => capacity * 8 * (1 + WIDTH);
