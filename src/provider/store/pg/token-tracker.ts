import type pg from "pg";
import { FredError } from "../../../core/errors.ts";
import type { ReplayStore } from "../replay-store.ts";
import type { TableMap } from "./tables.ts";

export const USED_TOKENS_MIGRATION = `CREATE TABLE used_tokens (
  token_key text PRIMARY KEY,
  expires_at bigint NOT NULL
);
CREATE INDEX used_tokens_by_expiry ON used_tokens (expires_at)`;

/** The used tokens of the SQLite file and of PostgreSQL (`fred placement migrate` copies them). */
export const USED_TOKENS_TABLE: TableMap = {
  sqlite: "used_tokens",
  pg: "used_tokens",
  key: ["token_key"],
  columns: { token_key: "text", expires_at: "bigint" },
};

/**
 * The replay store (replay-store.ts) in providerd's PostgreSQL database. Not fenced by the
 * leader lease: every instance serves tenants, so every instance spends tokens, in one
 * table. A use is one statement: the insert, or the takeover of an expired row, happens
 * only when no live row holds the key, so racing uses of one key (at two instances too)
 * give exactly one row changed. It returns once committed (synchronous commit).
 */
export class PgTokenTracker implements ReplayStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async tryUse(tokenKey: string, expiresAt: number, now: number): Promise<boolean> {
    if (tokenKey === "") throw new FredError("ERR_TOKEN_KEY", "token key must not be empty");
    const used = await this.#pool.query({
      name: "replay-use",
      text: `INSERT INTO used_tokens (token_key, expires_at) VALUES ($1, $2)
             ON CONFLICT (token_key) DO UPDATE SET expires_at = EXCLUDED.expires_at
               WHERE used_tokens.expires_at <= $3`,
      values: [tokenKey, expiresAt, now],
    });
    return used.rowCount === 1;
  }

  async sweep(now: number): Promise<number> {
    const swept = await this.#pool.query("DELETE FROM used_tokens WHERE expires_at <= $1", [now]);
    return swept.rowCount ?? 0;
  }

  async size(): Promise<number> {
    const rows = await this.#pool.query<{ n: string }>("SELECT count(*) AS n FROM used_tokens");
    return Number(rows.rows[0]?.n ?? 0);
  }
}
