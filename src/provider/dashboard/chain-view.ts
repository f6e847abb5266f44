import type { ChainLease, ChainPort, CoinAmount, LeaseStateName } from "../../chain/port.ts";
import { Coalescer } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";

/**
 * What the dashboard reads from the chain, memoized so page views never add chain load in
 * proportion to their number: the provider's leases (every state, all pages, reduced to
 * small rows as they arrive) and its withdrawable amounts are read at most once per
 * `ttlMs` whoever asks, and a single lease at most once per `ttlMs` per lease. A failed
 * read is remembered for the same time (as a failure), so a chain outage costs one read
 * per period too, not one per view.
 */
export type ChainStateName = "pending" | "active" | "closed" | "rejected" | "expired";
export const CHAIN_STATES: readonly ChainStateName[] = ["pending", "active", "closed", "rejected", "expired"];

export interface LeaseRow {
  uuid: string;
  tenant: string;
  state: ChainStateName | "unspecified";
  /** The first item's SKU (a lease's items are usually one SKU). */
  sku: string | undefined;
  createdAtMs: number | undefined;
}

export interface LeaseListing {
  ok: true;
  /** Sorted by UUID. */
  rows: readonly LeaseRow[];
  counts: Readonly<Record<ChainStateName, number>>;
  /** More leases than the dashboard keeps rows for: counts are complete, rows are not. */
  truncated: boolean;
  asOfMs: number;
}

export type Memo<T> = T | { ok: false; asOfMs: number };

export interface Withdrawable {
  ok: true;
  amounts: readonly CoinAmount[];
  asOfMs: number;
}

export interface LeaseRead {
  ok: true;
  lease: ChainLease | undefined;
  asOfMs: number;
}

/** Rows kept at most (about 200 bytes each, 10 MB): counts go on past it, the search does not. */
export const MAX_LEASE_ROWS = 50_000;

export function shortState(state: LeaseStateName): ChainStateName | "unspecified" {
  const s = state.replace("LEASE_STATE_", "").toLowerCase();
  return (CHAIN_STATES as readonly string[]).includes(s) ? (s as ChainStateName) : "unspecified";
}

export interface ChainViewOptions {
  chain: Pick<ChainPort, "getLease" | "leasePagesByProvider" | "providerWithdrawable">;
  providerUuid: string;
  clock: Clock;
  logger: Logger;
  ttlMs?: number;
}

export class ChainView {
  readonly #o: ChainViewOptions;
  readonly #listing: Coalescer<Memo<LeaseListing>>;
  readonly #withdrawable: Coalescer<Memo<Withdrawable>>;
  readonly #leases: Coalescer<Memo<LeaseRead>>;
  readonly #abort = new AbortController();

  constructor(o: ChainViewOptions) {
    this.#o = o;
    const ttlMs = o.ttlMs ?? 15_000;
    this.#listing = new Coalescer({ clock: o.clock, ttlMs, maxEntries: 1 });
    this.#withdrawable = new Coalescer({ clock: o.clock, ttlMs, maxEntries: 1 });
    this.#leases = new Coalescer({ clock: o.clock, ttlMs, maxEntries: 1_000 });
  }

  leases(): Promise<Memo<LeaseListing>> {
    return this.#listing.get("all", () => this.#remembered("lease listing", () => this.#list()));
  }

  withdrawable(): Promise<Memo<Withdrawable>> {
    return this.#withdrawable.get("all", () =>
      this.#remembered("withdrawable amounts", async () => {
        const w = await this.#o.chain.providerWithdrawable(this.#o.providerUuid, this.#abort.signal);
        return { ok: true as const, amounts: w.amounts, asOfMs: this.#o.clock.now() };
      }),
    );
  }

  lease(uuid: string): Promise<Memo<LeaseRead>> {
    return this.#leases.get(uuid, () =>
      this.#remembered("lease read", async () => ({
        ok: true as const,
        lease: await this.#o.chain.getLease(uuid, this.#abort.signal),
        asOfMs: this.#o.clock.now(),
      })),
    );
  }

  /** Stops reads in flight (shutdown). */
  close(): void {
    this.#abort.abort();
  }

  async #remembered<T>(what: string, load: () => Promise<T>): Promise<T | { ok: false; asOfMs: number }> {
    try {
      return await load();
    } catch (err) {
      if (!this.#abort.signal.aborted) this.#o.logger.warn({ err }, `dashboard: chain ${what} failed`);
      return { ok: false, asOfMs: this.#o.clock.now() };
    }
  }

  async #list(): Promise<LeaseListing> {
    const rows: LeaseRow[] = [];
    const counts: Record<ChainStateName, number> = {
      pending: 0,
      active: 0,
      closed: 0,
      rejected: 0,
      expired: 0,
    };
    let truncated = false;
    await this.#o.chain.leasePagesByProvider(
      this.#o.providerUuid,
      undefined,
      (page) => {
        for (const l of page) {
          const state = shortState(l.state);
          if (state !== "unspecified") counts[state]++;
          if (rows.length >= MAX_LEASE_ROWS) {
            truncated = true;
            continue;
          }
          rows.push({
            uuid: l.uuid,
            tenant: l.tenant,
            state,
            sku: l.items[0]?.skuUuid,
            createdAtMs: l.createdAt?.getTime(),
          });
        }
      },
      this.#abort.signal,
    );
    rows.sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
    return { ok: true, rows, counts, truncated, asOfMs: this.#o.clock.now() };
  }
}
