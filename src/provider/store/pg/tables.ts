import { createHash } from "node:crypto";
import type Database from "better-sqlite3";
import type pg from "pg";

/**
 * How one of providerd's SQLite tables maps onto its PostgreSQL twin, and the few bulk
 * statements both the placement mirror and `fred placement migrate` run on it. Rows travel
 * in SQLite's form (arrays in `columns` order: Buffers, numbers, strings, nulls, 0/1 for
 * booleans); the conversions to and from PostgreSQL's types live here alone.
 */
export type PgType = "text" | "bytea" | "bigint" | "uuid" | "boolean";

export interface TableMap {
  /** The table in the SQLite schema. */
  sqlite: string;
  /** Its name in providerd's PostgreSQL database. */
  pg: string;
  /** The primary key: one or two columns. */
  key: readonly string[];
  /** Every column, with its PostgreSQL type. */
  columns: Readonly<Record<string, PgType>>;
  /** Rows that belong to the SQLite file itself and are never copied (a SQL condition). */
  fileOnly?: string;
}

/** A row as SQLite holds it, in `columns` order. */
export type Row = unknown[];

export function columnNames(t: TableMap): string[] {
  return Object.keys(t.columns);
}

/** Every row of `t` in a SQLite database, except the file's own. */
export function readSqliteRows(db: Database.Database, t: TableMap): Row[] {
  const where = t.fileOnly === undefined ? "" : ` WHERE NOT (${t.fileOnly})`;
  return db
    .prepare<[], Row>(`SELECT ${columnNames(t).join(", ")} FROM ${t.sqlite}${where}`)
    .raw()
    .all();
}

/** Every row of `t` in PostgreSQL, in SQLite's form. */
export async function readPgRows(client: pg.ClientBase, t: TableMap): Promise<Row[]> {
  const names = columnNames(t);
  const types = names.map((n) => t.columns[n]!);
  const result = await client.query<unknown[]>({
    text: `SELECT ${names.join(", ")} FROM ${t.pg}`,
    rowMode: "array",
  });
  return result.rows.map((r) => r.map((v, i) => fromPg(types[i]!, v)));
}

function fromPg(type: PgType, v: unknown): unknown {
  if (v === null) return null;
  if (type === "bigint") return Number(v);
  if (type === "boolean") return v === true ? 1 : 0;
  return v;
}

function toPg(type: PgType, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (type === "boolean") return v === 1 || v === true;
  return v;
}

/** Inserts `rows`, or replaces the rows with the same keys: one statement, the rows as one array per column. */
export async function upsertPgRows(client: pg.ClientBase, t: TableMap, rows: readonly Row[]): Promise<void> {
  if (rows.length === 0) return;
  const names = columnNames(t);
  const rest = names.filter((n) => !t.key.includes(n));
  const update =
    rest.length === 0 ? "NOTHING" : `UPDATE SET ${rest.map((n) => `${n} = EXCLUDED.${n}`).join(", ")}`;
  await client.query({
    name: `fred_upsert_${t.pg}`,
    text: `INSERT INTO ${t.pg} (${names.join(", ")})
           SELECT * FROM unnest(${names.map((n, i) => `$${i + 1}::${t.columns[n]}[]`).join(", ")})
           ON CONFLICT (${t.key.join(", ")}) DO ${update}`,
    values: names.map((n, i) => rows.map((r) => toPg(t.columns[n]!, r[i]))),
  });
}

/** Deletes the rows with these keys (each key in `t.key` order). */
export async function deletePgRows(client: pg.ClientBase, t: TableMap, keys: readonly Row[]): Promise<void> {
  if (keys.length === 0) return;
  const [a, b] = t.key;
  const types = t.key.map((k) => t.columns[k]!);
  await client.query({
    name: `fred_delete_${t.pg}`,
    text:
      b === undefined
        ? `DELETE FROM ${t.pg} WHERE ${a} = ANY($1::${types[0]}[])`
        : `DELETE FROM ${t.pg} AS t USING unnest($1::${types[0]}[], $2::${types[1]}[]) AS d(a, b)
           WHERE t.${a} = d.a AND t.${b} = d.b`,
    values: t.key.map((_, i) => keys.map((k) => toPg(types[i]!, k[i]))),
  });
}

/**
 * What a table holds, whichever engine it was read from: its row count and a digest that
 * does not depend on row order (each row's SHA-256, sorted, hashed again), so a copy is
 * verified without either engine's collation deciding the order.
 */
export function tableDigest(rows: readonly Row[]): { rows: number; sha256: string } {
  const each = rows.map((r) => createHash("sha256").update(canonical(r)).digest("hex")).sort();
  return { rows: rows.length, sha256: createHash("sha256").update(each.join("\n")).digest("hex") };
}

function canonical(row: Row): string {
  return JSON.stringify(row.map((v) => (Buffer.isBuffer(v) ? { bytes: v.toString("hex") } : v)));
}
