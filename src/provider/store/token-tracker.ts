import type { Statement } from "better-sqlite3";
import { FredError } from "../../core/errors.ts";
import type { SqliteDatabase } from "../../sqlite/index.ts";
import { openStore } from "./sqlite.ts";

/**
 * Replay protection for tenant tokens: the first use of a token key is recorded with
 * the time after which the token could no longer verify anyway; a second use before
 * then is a replay. Expired rows are swept, never needed again.
 */
const MIGRATIONS = [
  `CREATE TABLE used_tokens (
     token_key  TEXT PRIMARY KEY,
     expires_at INTEGER NOT NULL
   ) STRICT;
   CREATE INDEX used_tokens_by_expiry ON used_tokens(expires_at);`,
];

export class TokenTracker {
  readonly #database: SqliteDatabase;
  readonly #insert: Statement<[string, number]>;
  readonly #lookup: Statement<[string], number>;
  readonly #refresh: Statement<[number, string]>;
  readonly #sweep: Statement<[number]>;
  readonly #size: Statement<[], number>;
  readonly #use: (tokenKey: string, expiresAt: number, now: number) => boolean;

  private constructor(database: SqliteDatabase) {
    const db = database.db;
    this.#database = database;
    this.#insert = db.prepare("INSERT OR IGNORE INTO used_tokens (token_key, expires_at) VALUES (?, ?)");
    this.#lookup = db
      .prepare<[string], number>("SELECT expires_at FROM used_tokens WHERE token_key = ?")
      .pluck();
    this.#refresh = db.prepare("UPDATE used_tokens SET expires_at = ? WHERE token_key = ?");
    this.#sweep = db.prepare("DELETE FROM used_tokens WHERE expires_at <= ?");
    this.#size = db.prepare<[], number>("SELECT count(*) FROM used_tokens").pluck();
    this.#use = db.transaction((tokenKey: string, expiresAt: number, now: number) => {
      if (this.#insert.run(tokenKey, expiresAt).changes === 1) return true;
      const existing = this.#lookup.get(tokenKey) as number;
      if (existing > now) return false;
      this.#refresh.run(expiresAt, tokenKey);
      return true;
    });
  }

  static open(path: string): TokenTracker {
    return new TokenTracker(
      openStore(path, "token-tracker", MIGRATIONS, { create: "if-missing", durability: "full" }),
    );
  }

  close(): void {
    this.#database.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * Records the first use of `tokenKey`; returns false when it was already used and has
   * not expired (a replay). An expired row is reused, since its token no longer verifies.
   */
  tryUse(tokenKey: string, expiresAt: number, now: number): boolean {
    if (tokenKey === "") throw new FredError("ERR_TOKEN_KEY", "token key must not be empty");
    return this.#use(tokenKey, expiresAt, now);
  }

  /** Deletes rows that expired at or before `now`; returns how many. */
  sweep(now: number): number {
    return this.#sweep.run(now).changes;
  }

  size(): number {
    return this.#size.get() as number;
  }
}
