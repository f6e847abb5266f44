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
