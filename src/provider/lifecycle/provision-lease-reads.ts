import type { ChainLease, ChainPort } from "../../chain/port.ts";
import type { Clock } from "../../core/clock.ts";

/**
 * Re-reads leases for the provision workflow. Requests made in the same turn are
 * coalesced: a handful are read one by one, but a burst (a block full of new leases)
 * becomes one paged PENDING listing of the provider's leases, with single reads only for
 * leases that listing does not contain.
 *
 * A block's lease_created events reach us as many frames (one per tx), so the bursts of
 * one block arrive turn after turn. Only one listing runs at a time, and what it lists
 * stays usable for `listingTtlMs`: later bursts of the same block are answered from it
 * instead of listing thousands of leases again. Requests are answered page by page as
 * the listing arrives, so the first provisions go out while it is still running. Each
 * listed lease answers one request (the next read of that lease goes to the chain). The
 * time to live counts from the listing's end: a listing slower than it (a loaded node)
 * must not throw away its own pages. Single reads are not bounded here: the chain
 * connection's query pool is the one bound on ABCI queries at once (16 connections; the
 * rest wait in its queue), so a burst of single reads can no longer open thousands of
 * connections to the node (the runaway once seen on a loaded machine). A lease seen PENDING a moment ago may
 * have been closed since; that is no worse than the read itself, which is stale by the
 * time the provision goes out — the lease_closed event that follows tears it down.
 */
type Waiter = { resolve: (l: ChainLease | undefined) => void; reject: (e: unknown) => void };

export interface ProvisionLeaseReadsOptions {
  /** Requests in one turn that make a listing worth it (default 32). */
  burst?: number;
  /** How long a listing's leases may answer later requests (default 2 s). */
  listingTtlMs?: number;
}

export class ProvisionLeaseReads {
  readonly #chain: ChainPort;
  readonly #providerUuid: string;
  readonly #clock: Clock;
  readonly #burst: number;
  readonly #ttlMs: number;
  #waiting = new Map<string, Waiter[]>();
  #scheduled = false;
  /** Leases of the latest listing not yet handed out, and when that listing ended (+∞ while it runs). */
  #listed = new Map<string, ChainLease>();
  #listedAt = Number.NEGATIVE_INFINITY;
  #listing: Promise<void> | undefined;
  /** Batches waiting on the running listing; each page answers what it can. */
  readonly #joiners = new Set<Map<string, Waiter[]>>();
  /** Paged listings done instead of single reads (for tests and metrics). */
  sweeps = 0;

  constructor(chain: ChainPort, providerUuid: string, clock: Clock, opts: ProvisionLeaseReadsOptions = {}) {
    this.#chain = chain;
    this.#providerUuid = providerUuid;
    this.#clock = clock;
    this.#burst = opts.burst ?? 32;
    this.#ttlMs = opts.listingTtlMs ?? 2_000;
  }

  get(leaseUuid: string): Promise<ChainLease | undefined> {
    return new Promise((resolve, reject) => {
      const list = this.#waiting.get(leaseUuid) ?? [];
      list.push({ resolve, reject });
      this.#waiting.set(leaseUuid, list);
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    this.#scheduled = false;
    const batch = this.#waiting;
    this.#waiting = new Map();
    this.#answerFromListing(batch);
    if (batch.size >= this.#burst) {
      // A listing already running started before these requests: it may lack them, so
      // whatever it leaves unanswered waits for one that starts afterwards.
      if (this.#listing !== undefined) await this.#join(batch);
      if (batch.size >= this.#burst) await this.#join(batch, this.#listing ?? this.#list());
    }
    await Promise.all(
      [...batch].map(async ([uuid, waiters]) => {
        try {
          const lease = await this.#chain.getLease(uuid);
          for (const w of waiters) w.resolve(lease);
        } catch (err) {
          for (const w of waiters) w.reject(err);
        }
      }),
    );
  }

  /** Resolves (and removes from `batch`) every request the current listing can answer. */
  #answerFromListing(batch: Map<string, Waiter[]>): void {
    if (this.#listed.size === 0) return;
    if (this.#clock.now() - this.#listedAt > this.#ttlMs) {
      this.#listed = new Map();
      return;
    }
    for (const [uuid, waiters] of batch) {
      const lease = this.#listed.get(uuid);
      if (lease === undefined) continue;
      this.#listed.delete(uuid);
      batch.delete(uuid);
      for (const w of waiters) w.resolve(lease);
    }
  }

  /** Answers `batch` from the running listing's pages until it ends. */
  async #join(batch: Map<string, Waiter[]>, listing = this.#listing): Promise<void> {
    this.#joiners.add(batch);
    this.#answerFromListing(batch);
    try {
      await listing;
    } finally {
      this.#joiners.delete(batch);
    }
  }

  #list(): Promise<void> {
    this.sweeps++;
    this.#listed = new Map();
    this.#listedAt = Number.POSITIVE_INFINITY;
    const add = (page: readonly ChainLease[]) => {
      for (const l of page) this.#listed.set(l.uuid, l);
      for (const batch of this.#joiners) this.#answerFromListing(batch);
    };
    let paged = false;
    this.#listing = this.#chain
      .leasesByProvider(this.#providerUuid, "LEASE_STATE_PENDING", undefined, (page) => {
        paged = true;
        add(page);
      })
      .then(
        // A chain port that does not report pages hands everything over at the end.
        (pending) => {
          if (!paged) add(pending);
        },
        // A failed listing only costs the single reads that follow.
        () => undefined,
      )
      .finally(() => {
        this.#listing = undefined;
        this.#listedAt = this.#clock.now();
      });
    return this.#listing;
  }
}
