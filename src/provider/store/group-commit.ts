/**
 * Group commit: many concurrent callers each await "my row is durable", and one
 * transaction serves all of them. Items submitted while a batch is being written wait
 * for the next one. Each caller's promise settles only after the transaction holding its
 * item has committed (or failed as a whole) and, with `durable`, reached the disk.
 */
export class GroupCommitter<T, R> {
  readonly #flush: (items: readonly T[]) => readonly R[];
  readonly #maxBatch: number;
  readonly #durable: () => Promise<void>;
  #queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  #scheduled = false;
  #closed = false;
  /** Number of transactions written so far (for benchmarks and metrics). */
  batches = 0;

  constructor(
    flush: (items: readonly T[]) => readonly R[],
    opts: { maxBatch?: number; durable?: () => Promise<void> } = {},
  ) {
    this.#flush = flush;
    this.#maxBatch = opts.maxBatch ?? 4096;
    this.#durable = opts.durable ?? (() => Promise.resolve());
  }

  submit(item: T): Promise<R> {
    if (this.#closed) return Promise.reject(new Error("group committer is closed"));
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (this.#queue.length >= this.#maxBatch) this.#drain();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        // setImmediate lets every caller of this turn join the batch before we write.
        setImmediate(() => this.#drain());
      }
    });
  }

  get pending(): number {
    return this.#queue.length;
  }

  #drain(): void {
    this.#scheduled = false;
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#maxBatch);
      this.batches++;
      let results: readonly R[];
      try {
        results = this.#flush(batch.map((b) => b.item));
      } catch (err) {
        for (const b of batch) b.reject(err);
        continue;
      }
      this.#durable().then(
        () => {
          batch.forEach((b, i) => {
            b.resolve(results[i] as R);
          });
        },
        (err: unknown) => {
          for (const b of batch) b.reject(err);
        },
      );
    }
  }

  /** Writes whatever is queued, then refuses new items. */
  close(): void {
    this.#drain();
    this.#closed = true;
  }
}
