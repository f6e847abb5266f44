/**
 * The few Cosmos/Google messages our billing and sku messages embed, declared with our codec so
 * they share its reader/writer. Shapes match cosmjs-types (Coin amounts are decimal strings,
 * Timestamp seconds are bigint) so values pass between the two without conversion.
 */
import { f, message } from "./codec.ts";

export const Coin = message("/cosmos.base.v1beta1.Coin", {
  denom: f.string(1),
  amount: f.string(2),
});
export type Coin = ReturnType<typeof Coin.decode>;

export const Timestamp = message("/google.protobuf.Timestamp", {
  seconds: f.uint64(1),
  nanos: f.uint32(2),
});
export type Timestamp = ReturnType<typeof Timestamp.decode>;

export const PageRequest = message("/cosmos.base.query.v1beta1.PageRequest", {
  key: f.bytes(1),
  offset: f.uint64(2),
  limit: f.uint64(3),
  countTotal: f.bool(4),
  reverse: f.bool(5),
});
export type PageRequest = ReturnType<typeof PageRequest.decode>;

export const PageResponse = message("/cosmos.base.query.v1beta1.PageResponse", {
  nextKey: f.bytes(1),
  total: f.uint64(2),
});
export type PageResponse = ReturnType<typeof PageResponse.decode>;

/** Converts nanoseconds since the Unix epoch to a Timestamp. */
export function timestampFromNanos(nanos: bigint): Timestamp {
  return { seconds: nanos / 1_000_000_000n, nanos: Number(nanos % 1_000_000_000n) };
}

/** Converts a Timestamp to nanoseconds since the Unix epoch. */
export function timestampToNanos(ts: Timestamp): bigint {
  return ts.seconds * 1_000_000_000n + BigInt(ts.nanos);
}
