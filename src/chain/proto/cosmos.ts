/**
 * The few Cosmos/Google messages our billing and sku messages embed, and the parts of the SDK's
 * tx service the chain client reads (Simulate's gas, a result's message responses), declared
 * with our codec so they share its reader/writer. cosmjs-types' own codecs of the latter bring
 * CometBFT's whole ABCI and block type tree along (about 0.4 MB of module sources; an idle
 * providerd's V8 heap in use 28.7 → 28.0 MB without them). Shapes
 * match cosmjs-types (Coin amounts are decimal strings, Timestamp seconds are bigint) so values
 * pass between the two without conversion.
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

export const Any = message("/google.protobuf.Any", {
  typeUrl: f.string(1),
  value: f.bytes(2),
});
export type Any = ReturnType<typeof Any.decode>;

/** A delivered tx's result data: one response per message (field 1, the pre-0.46 form, unread). */
export const TxMsgData = message("/cosmos.base.abci.v1beta1.TxMsgData", {
  msgResponses: f.repeatedMessage(2, Any),
});

export const GasInfo = message("/cosmos.base.abci.v1beta1.GasInfo", {
  gasWanted: f.uint64(1),
  gasUsed: f.uint64(2),
});

/** Simulate's request: the tx's bytes (field 1, the deprecated decoded tx, is never sent). */
export const SimulateRequest = message("/cosmos.tx.v1beta1.SimulateRequest", {
  txBytes: f.bytes(2),
});

/**
 * Simulate's response, read for its gas only. Its execution result (field 2) carries every
 * message's events: for an acknowledgement of 1,000 leases, megabytes of attribute strings.
 * Undeclared, it is skipped by the reader rather than decoded into strings nobody reads.
 */
export const SimulateResponse = message("/cosmos.tx.v1beta1.SimulateResponse", {
  gasInfo: f.message(1, GasInfo),
});

/** Converts nanoseconds since the Unix epoch to a Timestamp. */
export function timestampFromNanos(nanos: bigint): Timestamp {
  return { seconds: nanos / 1_000_000_000n, nanos: Number(nanos % 1_000_000_000n) };
}

/** Converts a Timestamp to nanoseconds since the Unix epoch. */
export function timestampToNanos(ts: Timestamp): bigint {
  return ts.seconds * 1_000_000_000n + BigInt(ts.nanos);
}
