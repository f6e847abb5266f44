/**
 * One serial queue per key (a lease UUID): work for the same lease runs one task at a
 * time in submission order, work for different leases runs concurrently. A failing task
 * never blocks the tasks queued behind it.
 */
export class KeyedQueue {
  readonly #tails = new Map<string, Promise<void>>();
  #pending = 0;

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    this.#pending++;
    const result = previous.then(task);
    const tail: Promise<void> = result.then(
      () => this.#settle(key, tail),
      () => this.#settle(key, tail),
    );
    this.#tails.set(key, tail);
    return result;
  }

  #settle(key: string, tail: Promise<void>): void {
    this.#pending--;
    if (this.#tails.get(key) === tail) this.#tails.delete(key);
  }

  /** Tasks queued or running, over every key. */
  get depth(): number {
    return this.#pending;
  }

  /** Keys with queued or running work. */
  get activeKeys(): number {
    return this.#tails.size;
  }

  /** Resolves once every task queued so far (and any queued meanwhile) has finished. */
  async idle(): Promise<void> {
    while (this.#tails.size > 0) await Promise.allSettled([...this.#tails.values()]);
  }
}
