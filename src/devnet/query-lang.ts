/**
 * The subset of CometBFT's event query language that subscribers and tx_search use:
 * conditions joined by AND; operators =, <, <=, >, >=, CONTAINS, EXISTS; strings in single
 * quotes, numbers bare. A condition holds when any value under its key satisfies it.
 */
export type Op = "=" | "<" | "<=" | ">" | ">=" | "CONTAINS" | "EXISTS";

export interface Condition {
  key: string;
  op: Op;
  /** String operand (quoted in the query) or number (bare); undefined for EXISTS. */
  value?: string | number;
}

export class QuerySyntaxError extends Error {}

const TOKEN = /\s*(?:(AND)\b|(EXISTS)\b|(CONTAINS)\b|(<=|>=|=|<|>)|'([^']*)'|([A-Za-z0-9_.\-/:]+))/y;

export function parseQuery(text: string): Condition[] {
  if (typeof text !== "string" || text.trim() === "") throw new QuerySyntaxError("empty query");
  if (text.length > 4096) throw new QuerySyntaxError("query is too long");
  const tokens: { kind: string; text: string }[] = [];
  TOKEN.lastIndex = 0;
  let pos = 0;
  while (pos < text.length) {
    if (/^\s*$/.test(text.slice(pos))) break;
    TOKEN.lastIndex = pos;
    const m = TOKEN.exec(text);
    if (!m) throw new QuerySyntaxError(`unexpected input at position ${pos}: ${text.slice(pos, pos + 20)}`);
    pos = TOKEN.lastIndex;
    if (m[1]) tokens.push({ kind: "and", text: m[1] });
    else if (m[2]) tokens.push({ kind: "exists", text: m[2] });
    else if (m[3]) tokens.push({ kind: "op", text: "CONTAINS" });
    else if (m[4]) tokens.push({ kind: "op", text: m[4] });
    else if (m[5] !== undefined) tokens.push({ kind: "string", text: m[5] });
    else tokens.push({ kind: "word", text: m[6] as string });
  }
  const out: Condition[] = [];
  let i = 0;
  for (;;) {
    const key = tokens[i++];
    if (key?.kind !== "word") throw new QuerySyntaxError("expected an event key");
    const op = tokens[i++];
    if (op?.kind === "exists") out.push({ key: key.text, op: "EXISTS" });
    else if (op?.kind === "op") {
      const v = tokens[i++];
      if (v?.kind === "string") out.push({ key: key.text, op: op.text as Op, value: v.text });
      else if (v?.kind === "word" && /^-?[0-9]+(\.[0-9]+)?$/.test(v.text)) {
        out.push({ key: key.text, op: op.text as Op, value: Number(v.text) });
      } else throw new QuerySyntaxError(`expected a quoted string or a number after ${key.text} ${op.text}`);
    } else throw new QuerySyntaxError(`expected an operator after ${key.text}`);
    const next = tokens[i++];
    if (!next) break;
    if (next.kind !== "and") throw new QuerySyntaxError(`expected AND, got ${next.text}`);
  }
  return out;
}

function holds(c: Condition, value: string): boolean {
  if (c.op === "EXISTS") return true;
  if (c.op === "CONTAINS") return typeof c.value === "string" && value.includes(c.value);
  if (typeof c.value === "number") {
    const n = Number(value);
    if (value.trim() === "" || Number.isNaN(n)) return false;
    switch (c.op) {
      case "=":
        return n === c.value;
      case "<":
        return n < c.value;
      case "<=":
        return n <= c.value;
      case ">":
        return n > c.value;
      case ">=":
        return n >= c.value;
    }
  }
  const s = String(c.value);
  switch (c.op) {
    case "=":
      return value === s;
    case "<":
      return value < s;
    case "<=":
      return value <= s;
    case ">":
      return value > s;
    case ">=":
      return value >= s;
  }
  return false;
}

export function matches(conditions: Condition[], events: Record<string, string[]>): boolean {
  return conditions.every((c) => {
    const values = events[c.key];
    if (!values) return false;
    // Hash lookups are case-insensitive in CometBFT.
    if (c.key === "tx.hash" && typeof c.value === "string") {
      const want = c.value.toUpperCase();
      return values.some((v) => v.toUpperCase() === want);
    }
    return values.some((v) => holds(c, v));
  });
}
