/**
 * Replay protection for tenant tokens: the first use of a token key is recorded with the
 * time after which the token could no longer verify anyway; a second use before then is
 * a replay. Expired rows are swept, never needed again.
 *
 * One contract, two engines (test/provider/store/replay-store-contract.ts runs on both):
 * `TokenTracker` in its own SQLite file, and `PgTokenTracker` in providerd's PostgreSQL
 * database, where every instance (leader or standby) spends tokens in the same table, so
 * a token used at one instance is a replay at every other. A use is durable when its
 * promise resolves, and two uses of one key racing (in one process or two) give exactly
 * one `true`.
 */
export interface ReplayStore {
  /**
   * Records the first use of `tokenKey`; false when it was already used and has not
   * expired (a replay). An expired row is reused, since its token no longer verifies.
   */
  tryUse(tokenKey: string, expiresAt: number, now: number): Promise<boolean>;
  /** Deletes rows that expired at or before `now`; resolves to how many. */
  sweep(now: number): Promise<number>;
  /** Rows held (a health probe: it fails when the store cannot be read). */
  size(): Promise<number>;
}
