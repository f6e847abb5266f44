import type { Statement } from "better-sqlite3";
import { FredError } from "../../core/errors.ts";
import type { SqliteDatabase } from "../../sqlite/index.ts";
import type { ReplayStore } from "./replay-store.ts";
import { openStore } from "./sqlite.ts";

/** The replay store (replay-store.ts) in its own SQLite file, each use committed and fsynced. */
export const TOKEN_TRACKER_MIGRATIONS: readonly string[] = [
  `CREATE TABLE used_tokens (
     token_key  TEXT PRIMARY KEY,
     expires_at INTEGER NOT NULL
   ) STRICT;
   CREATE INDEX used_tokens_by_expiry ON used_tokens(expires_at);`,
];

export class TokenTracker implements ReplayStore {
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
      openStore(path, "token-tracker", TOKEN_TRACKER_MIGRATIONS, {
        create: "if-missing",
        durability: "full",
      }),
    );
  }

  close(): void {
    this.#database.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  async tryUse(tokenKey: string, expiresAt: number, now: number): Promise<boolean> {
    if (tokenKey === "") throw new FredError("ERR_TOKEN_KEY", "token key must not be empty");
    return this.#use(tokenKey, expiresAt, now);
  }

  async sweep(now: number): Promise<number> {
    return this.#sweep.run(now).changes;
  }

  async size(): Promise<number> {
    return this.#size.get() as number;
  }
}
