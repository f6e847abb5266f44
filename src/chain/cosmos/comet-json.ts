/**
 * The few CometBFT (0.38) JSON-RPC results the chain client reads besides ABCI queries
 * (`status`, `broadcast_tx_sync`, `tx_search`, `block_results`), read as far as it uses
 * them and checked there, as cosmjs's Comet38Client decodes them. Not that client: with
 * @cosmjs/crypto, the noble curves and ciphers it brings and its stream library it stays
 * resident in providerd for these four calls, 2.1 MB of V8 heap and about 2 MB of an idle
 * providerd's RSS (docs/benchmarks-history.md, "Idle memory II"). abci_query's reply is read
 * beside its call, in rpc.ts.
 * A result off the protocol is `ERR_CHAIN_QUERY` (retryable), naming the method and field.
 * Pure code: rpc.ts makes the calls.
 */
import { FredError } from "../../core/errors.ts";

export interface NodeStatus {
  /** node_info.network: the chain id. */
  network: string;
  latestBlockHeight: number;
  latestBlockTime: Date;
}

/** CheckTx's answer to broadcast_tx_sync. */
export interface CheckTxResult {
  code: number;
  codespace: string;
  log: string;
}

/** An included transaction as tx_search finds it. */
export interface IncludedTx {
  height: number;
  code: number;
  codespace: string;
  log: string;
  gasWanted: bigint;
  gasUsed: bigint;
  /** The result's data (TxMsgData bytes); empty when none. */
  data: Uint8Array;
}

type Json = Record<string, unknown>;

function malformed(method: string, field: string): FredError {
  return new FredError("ERR_CHAIN_QUERY", `${method}: malformed reply (${field})`, { retryable: true });
}

function object(value: unknown, method: string, field: string): Json {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw malformed(method, field);
  return value as Json;
}

function nonEmptyString(value: unknown, method: string, field: string): string {
  if (typeof value !== "string" || value === "") throw malformed(method, field);
  return value;
}

/** A non-negative integer sent as a decimal string (int64 in CometBFT's JSON). */
function height(value: unknown, method: string, field: string): number {
  const text = nonEmptyString(value, method, field);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) throw malformed(method, field);
  return Number(text);
}

function bigintText(value: unknown, method: string, field: string): bigint {
  const text = value ?? "0";
  if (typeof text !== "string" || !/^-?\d+$/.test(text)) throw malformed(method, field);
  return BigInt(text);
}

/** An ABCI result's code, codespace and log (code 0 and empty strings when absent). */
function checkTx(r: Json, method: string): CheckTxResult {
  const code = r.code ?? 0;
  if (typeof code !== "number" || !Number.isInteger(code) || code < 0) throw malformed(method, "code");
  const text = (field: "codespace" | "log") => {
    const v = r[field] ?? "";
    if (typeof v !== "string") throw malformed(method, field);
    return v;
  };
  return { code, codespace: text("codespace"), log: text("log") };
}

export function decodeStatus(result: unknown): NodeStatus {
  const m = "status";
  const r = object(result, m, "result");
  const node = object(r.node_info, m, "node_info");
  const sync = object(r.sync_info, m, "sync_info");
  const time = Date.parse(nonEmptyString(sync.latest_block_time, m, "latest_block_time"));
  if (Number.isNaN(time)) throw malformed(m, "latest_block_time");
  return {
    network: nonEmptyString(node.network, m, "network"),
    latestBlockHeight: height(sync.latest_block_height, m, "latest_block_height"),
    latestBlockTime: new Date(time),
  };
}

export function decodeBroadcastTxSync(result: unknown): CheckTxResult {
  return checkTx(object(result, "broadcast_tx_sync", "result"), "broadcast_tx_sync");
}

/** The first transaction tx_search found, or undefined when it found none. */
export function decodeFirstTx(result: unknown): IncludedTx | undefined {
  const m = "tx_search";
  const txs = object(result, m, "result").txs;
  if (!Array.isArray(txs)) throw malformed(m, "txs");
  if (txs.length === 0) return undefined;
  const tx = object(txs[0], m, "txs[0]");
  const r = object(tx.tx_result, m, "tx_result");
  const data = r.data ?? "";
  if (typeof data !== "string") throw malformed(m, "data");
  return {
    height: height(tx.height, m, "height"),
    ...checkTx(r, m),
    gasWanted: bigintText(r.gas_wanted, m, "gas_wanted"),
    gasUsed: bigintText(r.gas_used, m, "gas_used"),
    data: Buffer.from(data, "base64"),
  };
}

/** block_results' finalize_block_events, as the node sent them (the event parser checks each). */
export function decodeBlockEvents(result: unknown): unknown[] {
  const events = object(result, "block_results", "result").finalize_block_events ?? [];
  if (!Array.isArray(events)) throw malformed("block_results", "finalize_block_events");
  return events;
}
