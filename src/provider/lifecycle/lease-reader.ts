import type { ChainLease, ChainPort } from "../../chain/port.ts";

/**
 * Re-reads leases for the provision workflow. Requests made in the same turn are
 * coalesced: a handful are read one by one, but a burst (a block full of new leases)
 * becomes one paged PENDING listing of the provider's leases, with single reads only for
 * leases that listing does not contain. Thousands of leases then cost tens of queries.
 */
type Waiter = { resolve: (l: ChainLease | undefined) => void; reject: (e: unknown) => void };

export class LeaseReader {
  readonly #chain: ChainPort;
  readonly #providerUuid: string;
  readonly #burst: number;
  #waiting = new Map<string, Waiter[]>();
  #scheduled = false;
  /** Paged listings done instead of single reads (for tests and metrics). */
  sweeps = 0;

  constructor(chain: ChainPort, providerUuid: string, burst = 32) {
    this.#chain = chain;
    this.#providerUuid = providerUuid;
    this.#burst = burst;
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
    let listed = new Map<string, ChainLease>();
    if (batch.size >= this.#burst) {
      try {
        this.sweeps++;
        const pending = await this.#chain.leasesByProvider(this.#providerUuid, "LEASE_STATE_PENDING");
        listed = new Map(pending.map((l) => [l.uuid, l]));
      } catch {
        listed = new Map();
      }
    }
    await Promise.all(
      [...batch].map(async ([uuid, waiters]) => {
        try {
          const lease = listed.get(uuid) ?? (await this.#chain.getLease(uuid));
          for (const w of waiters) w.resolve(lease);
        } catch (err) {
          for (const w of waiters) w.reject(err);
        }
      }),
    );
  }
}
