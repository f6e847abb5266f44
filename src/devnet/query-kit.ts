/**
 * What the devnet's gRPC queries share (every module's, and the node service's): gRPC-status errors in the text form the
 * SDK's query router produces, and cursor pagination over an ordered KV prefix with the
 * chain's limits (default 100, max 1000; offset/count_total scans capped at 20 000 rows;
 * key together with offset refused). `next_key` is the UTF-8 of the first key not returned
 * (inclusive resume).
 */
import type { PageRequest, PageResponse } from "../chain/proto/index.ts";
import { type ChainError, type RegisteredError, sdkErrors } from "./errors.ts";
import type { KVStore } from "./module.ts";

export type GrpcStatus =
  | "InvalidArgument"
  | "FailedPrecondition"
  | "NotFound"
  | "ResourceExhausted"
  | "Internal";

/**
 * The SDK's baseapp turns a gRPC query error into an ABCI error by wrapping it with a
 * registered error: NotFound → 22 "key not found"; InvalidArgument and FailedPrecondition →
 * 18 "invalid request"; every other status → 6 "unknown request".
 */
const GRPC_TO_SDK: Record<GrpcStatus, RegisteredError> = {
  NotFound: sdkErrors.keyNotFound,
  InvalidArgument: sdkErrors.invalidRequest,
  FailedPrecondition: sdkErrors.invalidRequest,
  ResourceExhausted: sdkErrors.unknownRequest,
  Internal: sdkErrors.unknownRequest,
};

/** An ABCI query failure as the SDK reports a gRPC error: `rpc error: code = … desc = …: <description>`. */
export function grpcError(status: GrpcStatus, desc: string): ChainError {
  return GRPC_TO_SDK[status].wrap(`rpc error: code = ${status} desc = ${desc}`);
}

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;
export const MAX_OFFSET_SCAN = 20_000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface PageOptions {
  defaultLimit?: number;
  maxLimit?: number;
  /** Refuse offset and count_total (cursor-only queries). */
  cursorOnly?: boolean;
}

export interface Page<T> {
  items: T[];
  pagination: PageResponse;
}

/**
 * Pages over the entries under `prefix`, keyed by what follows the prefix (a UUID or address).
 * With several prefixes (one index per lease state) their entries are merged in key order.
 * `load` turns one index entry into a result (or undefined to skip it).
 */
export function paginate<T>(
  store: KVStore,
  prefix: string | readonly string[],
  req: PageRequest | undefined,
  load: (suffix: string, value: Uint8Array) => T | undefined,
  opts: PageOptions = {},
): Page<T> {
  const key = req?.key ?? new Uint8Array();
  const offset = req?.offset ?? 0n;
  const countTotal = req?.countTotal ?? false;
  const reverse = req?.reverse ?? false;
  const maxLimit = opts.maxLimit ?? MAX_PAGE_LIMIT;
  if (key.length > 0 && offset > 0n)
    throw grpcError(
      "InvalidArgument",
      "paginate: invalid request, either offset or key is expected, got both",
    );
  if (opts.cursorOnly && (offset > 0n || countTotal))
    throw grpcError("InvalidArgument", "offset and count_total are not supported; use key");
  if (offset > BigInt(MAX_OFFSET_SCAN)) throw grpcError("ResourceExhausted", "offset scan limit exceeded");
  let limit = Number(req?.limit ?? 0n);
  if (limit === 0) limit = opts.defaultLimit ?? DEFAULT_PAGE_LIMIT;
  if (limit > maxLimit) limit = maxLimit;

  const from = key.length > 0 ? decoder.decode(key) : undefined;
  const prefixes = typeof prefix === "string" ? [prefix] : prefix;
  const items: T[] = [];
  let skipped = 0n;
  let scanned = 0;
  let nextKey = new Uint8Array();
  let total = 0n;
  for (const [suffix, v] of mergedEntries(store, prefixes, from, reverse)) {
    if (skipped < offset) {
      skipped++;
      total++;
      continue;
    }
    if (items.length === limit) {
      if (nextKey.length === 0) nextKey = encoder.encode(suffix);
      if (!countTotal) break;
      if (++scanned > MAX_OFFSET_SCAN)
        throw grpcError("ResourceExhausted", "count_total scan limit exceeded");
      total++;
      continue;
    }
    const item = load(suffix, v);
    if (item !== undefined) items.push(item);
    total++;
  }
  return { items, pagination: { nextKey, total: countTotal ? total : 0n } };
}

export function requireNonEmpty(value: string, what: string): void {
  if (value.trim() === "") throw grpcError("InvalidArgument", `${what} cannot be empty`);
}

/** Entries under one prefix from `from` (inclusive) on, as [suffix, value]. */
function* entriesUnder(
  store: KVStore,
  prefix: string,
  from: string | undefined,
  reverse: boolean,
): Generator<[string, Uint8Array]> {
  const range = reverse
    ? { prefix, reverse: true, ...(from === undefined ? {} : { end: `${prefix}${from}\u0000` }) }
    : { prefix, ...(from === undefined ? {} : { start: prefix + from }) };
  for (const [k, v] of store.iterate(range)) yield [k.slice(prefix.length), v];
}

/** K-way merge of several ordered prefixes by suffix (ascending, or descending when reversed). */
export function* mergedEntries(
  store: KVStore,
  prefixes: readonly string[],
  from: string | undefined,
  reverse: boolean,
): Generator<[string, Uint8Array]> {
  if (prefixes.length === 1) {
    yield* entriesUnder(store, prefixes[0]!, from, reverse);
    return;
  }
  const heads = prefixes.map((p) => {
    const it = entriesUnder(store, p, from, reverse);
    return { it, cur: it.next() };
  });
  for (;;) {
    let best: (typeof heads)[number] | undefined;
    for (const h of heads) {
      if (h.cur.done) continue;
      if (best === undefined) best = h;
      else {
        const a = h.cur.value[0];
        const b = (best.cur.value as [string, Uint8Array])[0];
        if (reverse ? a > b : a < b) best = h;
      }
    }
    if (best === undefined) return;
    yield best.cur.value as [string, Uint8Array];
    best.cur = best.it.next();
  }
}
