/**
 * The block event index behind CometBFT's `block_search`: every indexed attribute of a
 * block's FinalizeBlock events (BeginBlock/EndBlock events here) as "<type>.<key>=<value>"
 * → height, plus the implicit `block.height` key. As in the tx index, the most selective
 * condition picks candidates through SQL and the whole query is evaluated on each of them.
 */
import type Database from "better-sqlite3";
import { type EventJson, eventMap } from "./blocks.ts";
import { type Condition, matches } from "./query-lang.ts";

const HEIGHT_KEY = "block.height";

interface Row {
  height: number;
  results: string;
}

export class BlockIndex {
  readonly #db: Database.Database;
  readonly #insert: Database.Statement;
  readonly #byKv: Database.Statement<[string], Row>;
  readonly #byKey: Database.Statement<[string, string], Row>;
  readonly #range: Database.Statement<[number, number], { height: number }>;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#insert = db.prepare("INSERT OR IGNORE INTO block_kv (kv, height) VALUES (?, ?)");
    const fromKv = "SELECT b.height, b.results FROM block_kv k JOIN blocks b ON b.height = k.height";
    this.#byKv = db.prepare(`${fromKv} WHERE k.kv = ? ORDER BY k.height`);
    // Any value under one key: "<key>=" up to (not including) "<key>>" ('>' follows '=').
    this.#byKey = db.prepare(
      `SELECT DISTINCT b.height, b.results FROM block_kv k JOIN blocks b ON b.height = k.height
       WHERE k.kv >= ? AND k.kv < ? ORDER BY b.height`,
    );
    this.#range = db.prepare("SELECT height FROM blocks WHERE height BETWEEN ? AND ? ORDER BY height");
  }

  /** Called inside the block's transaction. */
  add(height: number, events: readonly EventJson[]): void {
    for (const e of events) {
      if (e.type === "") continue;
      for (const a of e.attributes) {
        if (a.index && a.key !== "") this.#insert.run(`${e.type}.${a.key}=${a.value}`, height);
      }
    }
  }

  prune(maxHeight: number): void {
    this.#db.prepare("DELETE FROM block_kv WHERE height <= ?").run(maxHeight);
  }

  /** Heights of the stored blocks matching the query, ascending. */
  search(conditions: Condition[], earliest: number, latest: number): number[] {
    const [lo, hi] = heightBounds(conditions, earliest, latest);
    if (lo > hi) return [];
    const eq = conditions.find((c) => c.op === "=" && c.key !== HEIGHT_KEY && typeof c.value === "string");
    const other = conditions.find((c) => c.key !== HEIGHT_KEY);
    // Only block.height conditions: the stored heights in range are the answer.
    if (!other)
      return this.#range
        .all(lo, hi)
        .map((r) => r.height)
        .filter((h) => matches(conditions, { [HEIGHT_KEY]: [String(h)] }));
    const rows = eq
      ? this.#byKv.all(`${eq.key}=${String(eq.value)}`)
      : this.#byKey.all(`${other.key}=`, `${other.key}>`);
    const out: number[] = [];
    for (const row of rows) {
      if (row.height < lo || row.height > hi) continue;
      const events = (JSON.parse(row.results) as { finalize_block_events: EventJson[] })
        .finalize_block_events;
      if (matches(conditions, eventMap(events, { [HEIGHT_KEY]: [String(row.height)] }))) out.push(row.height);
    }
    return out;
  }
}

/** The height range the `block.height` conditions allow, within the stored blocks. */
function heightBounds(conditions: Condition[], earliest: number, latest: number): [number, number] {
  let lo = earliest;
  let hi = latest;
  for (const c of conditions) {
    if (c.key !== HEIGHT_KEY || typeof c.value !== "number") continue;
    const v = c.value;
    if (c.op === "=") [lo, hi] = [Math.max(lo, Math.ceil(v)), Math.min(hi, Math.floor(v))];
    else if (c.op === ">") lo = Math.max(lo, Math.floor(v) + 1);
    else if (c.op === ">=") lo = Math.max(lo, Math.ceil(v));
    else if (c.op === "<") hi = Math.min(hi, Math.ceil(v) - 1);
    else if (c.op === "<=") hi = Math.min(hi, Math.floor(v));
  }
  return [lo, hi];
}
