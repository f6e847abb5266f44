/**
 * The one way a composition root gives back what it acquired: each resource is pushed as it
 * is acquired, and `close()` releases them in reverse order (LIFO). Every release runs even
 * when an earlier one throws; each failure is reported as it happens (`onError`), and the
 * first is re-thrown once all have run, so a failed close is neither silent nor a leak of
 * everything acquired before it. Closing twice returns the same promise.
 *
 * A root pushes only what it created: a resource it was lent (a substrate, a database handed
 * in by its caller) is its lender's to release.
 */
export type ReleaseErrorReporter = (err: unknown, name: string) => void;

export class ReleaseStack implements AsyncDisposable {
  readonly #releases: { name: string; release: () => unknown }[] = [];
  readonly #onError: ReleaseErrorReporter;
  #closing: Promise<void> | undefined;

  constructor(onError: ReleaseErrorReporter = () => {}) {
    this.#onError = onError;
  }

  /** Runs `release` at close, before everything pushed earlier. */
  defer(name: string, release: () => unknown): void {
    if (this.#closing !== undefined) throw new Error(`release stack already closed; cannot defer ${name}`);
    this.#releases.push({ name, release });
  }

  /** Defers `resource.close()` and hands the resource back, so acquiring and owning read as one line. */
  use<T extends { close(): unknown }>(name: string, resource: T): T {
    this.defer(name, () => resource.close());
    return resource;
  }

  get size(): number {
    return this.#releases.length;
  }

  close(): Promise<void> {
    this.#closing ??= this.#releaseAll();
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #releaseAll(): Promise<void> {
    let first: { err: unknown } | undefined;
    for (let next = this.#releases.pop(); next !== undefined; next = this.#releases.pop()) {
      try {
        await next.release();
      } catch (err) {
        first ??= { err };
        this.#onError(err, next.name);
      }
    }
    if (first !== undefined) throw first.err;
  }
}
