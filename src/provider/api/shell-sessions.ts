import { ApiError } from "./errors.ts";

/**
 * Open shell sessions, counted per lease and in total: a session holds its slot from the
 * moment its request passed authentication until its WebSocket is gone (or its request
 * failed), so the caps bound backend connections too. Over the lease's cap is the tenant's
 * own doing (429, as the maintenance reserve answers); over the provider's is a busy
 * provider (503, as every shared capacity does).
 */
export interface ShellSlot {
  release(): void;
}

export class ShellSessions {
  readonly #perLease: number;
  readonly #total: number;
  readonly #open = new Map<string, number>();
  readonly #closers = new Set<(code: number, reason: string) => void>();
  #count = 0;

  constructor(limits: { perLease: number; total: number }) {
    this.#perLease = limits.perLease;
    this.#total = limits.total;
  }

  get open(): number {
    return this.#count;
  }

  admit(leaseUuid: string): ShellSlot {
    const forLease = this.#open.get(leaseUuid) ?? 0;
    if (forLease >= this.#perLease) {
      throw new ApiError(
        "ERR_API_SHELL_LEASE_LIMIT",
        429,
        `this lease already has ${this.#perLease} open shell sessions`,
        {
          reason: "shell_sessions_per_lease",
          retryAfterSeconds: 1,
        },
      );
    }
    if (this.#count >= this.#total) {
      throw new ApiError(
        "ERR_API_SHELL_BUSY",
        503,
        "the provider has no shell session free; try again later",
        {
          reason: "shell_sessions_total",
          retryAfterSeconds: 1,
        },
      );
    }
    this.#open.set(leaseUuid, forLease + 1);
    this.#count++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#count--;
        const left = (this.#open.get(leaseUuid) ?? 1) - 1;
        if (left === 0) this.#open.delete(leaseUuid);
        else this.#open.set(leaseUuid, left);
      },
    };
  }

  /** Registers how to end a running session at shutdown; returns its unregistration. */
  track(close: (code: number, reason: string) => void): () => void {
    this.#closers.add(close);
    return () => this.#closers.delete(close);
  }

  closeAll(code: number, reason: string): void {
    for (const close of [...this.#closers]) close(code, reason);
  }
}
