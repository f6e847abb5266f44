/**
 * One in-process owner of each signing key's sequence. Signing and broadcasting run one at
 * a time per key (a FIFO mutex), so two sends never race one sequence number. After a
 * broadcast passes CheckTx the node has already bumped the account's sequence in its check
 * state, while queries still read the committed one — so the owner keeps counting locally
 * instead of re-reading, and re-reads only when told the count is wrong.
 */
export interface AccountState {
  accountNumber: bigint;
  sequence: number;
}

export class SequenceOwner {
  readonly address: string;
  readonly #fetch: (signal?: AbortSignal) => Promise<AccountState>;
  #state: AccountState | undefined;
  #tail: Promise<void> = Promise.resolve();

  constructor(address: string, fetch: (signal?: AbortSignal) => Promise<AccountState>) {
    this.address = address;
    this.#fetch = fetch;
  }

  /**
   * Runs `fn` with exclusive use of the key. `fn` receives the sequence to sign with and
   * returns whether that sequence was consumed (the tx passed CheckTx).
   */
  async exclusive<T>(
    fn: (account: AccountState) => Promise<{ value: T; consumed: boolean }>,
    signal?: AbortSignal,
  ): Promise<T> {
    const previous = this.#tail;
    let release: () => void = () => {};
    this.#tail = new Promise<void>((r) => {
      release = r;
    });
    try {
      await previous;
      signal?.throwIfAborted();
      if (this.#state === undefined) this.#state = await this.#fetch(signal);
      const account = { ...this.#state };
      const { value, consumed } = await fn(account);
      if (consumed && this.#state !== undefined) this.#state = { ...account, sequence: account.sequence + 1 };
      return value;
    } finally {
      release();
    }
  }

  /** The node said which sequence it expects: believe it. */
  correct(expected: number | undefined): void {
    if (expected === undefined || this.#state === undefined) this.#state = undefined;
    else this.#state = { ...this.#state, sequence: expected };
  }

  /** Forget the cached state; the next send re-reads the account. */
  invalidate(): void {
    this.#state = undefined;
  }

  get cached(): AccountState | undefined {
    return this.#state === undefined ? undefined : { ...this.#state };
  }
}
