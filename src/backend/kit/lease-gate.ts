/**
 * A keyed async mutex: every workflow that touches the substrate for one lease runs under
 * that lease's gate, so provision, close and recovery never interleave on a lease while
 * different leases proceed in parallel. It carries no state beyond the queue.
 */
export class LeaseGate {
  readonly #tails = new Map<string, Promise<void>>();

  isBusy(key: string): boolean {
    return this.#tails.has(key);
  }

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Runs `work` only when nobody holds or waits for the key; returns false otherwise. */
  async tryRun(key: string, work: () => Promise<void>): Promise<boolean> {
    if (this.#tails.has(key)) return false;
    await this.run(key, work);
    return true;
  }

  /** Resolves when every queued workflow has finished. */
  async drain(): Promise<void> {
    while (this.#tails.size > 0) await Promise.allSettled([...this.#tails.values()]);
  }
}
