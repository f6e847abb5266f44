/**
 * Classifies one CometBFT websocket message (JSON-RPC 2.0). Subscription pushes reuse the
 * subscribe request's id and carry `result.query`; the subscribe acknowledgement is
 * `result: {}`; failures are `error: {code, message, data}`.
 */
import { parseHeight } from "./parse.ts";

export type Frame =
  | { type: "ack"; id: unknown }
  | { type: "rpc_error"; id: unknown; message: string }
  | { type: "tx"; id: unknown; height: number; txHash: string | undefined; eventMap: unknown }
  | { type: "block"; id: unknown; height: number; events: unknown }
  | { type: "malformed"; reason: string };

function obj(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function firstString(map: Record<string, unknown> | undefined, key: string): string | undefined {
  const v = map?.[key];
  return Array.isArray(v) && typeof v[0] === "string" ? v[0] : undefined;
}

export function classifyFrame(text: string): Frame {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return { type: "malformed", reason: "not JSON" };
  }
  const m = obj(msg);
  if (m === undefined || m.jsonrpc !== "2.0")
    return { type: "malformed", reason: "not a JSON-RPC 2.0 object" };
  const id = m.id;
  const error = obj(m.error);
  if (error !== undefined) {
    const detail = typeof error.data === "string" ? `: ${error.data}` : "";
    return { type: "rpc_error", id, message: `${String(error.message ?? "error")}${detail}` };
  }
  const result = obj(m.result);
  if (result === undefined) return { type: "malformed", reason: "no result" };
  if (result.query === undefined) return { type: "ack", id };
  const data = obj(result.data);
  const value = obj(data?.value);
  const eventMap = obj(result.events);
  if (data === undefined || value === undefined || typeof data.type !== "string")
    return { type: "malformed", reason: "no data" };
  switch (data.type) {
    case "tendermint/event/Tx": {
      const txr = obj(value.TxResult);
      let height = parseHeight(txr?.height);
      if (Number.isNaN(height)) height = parseHeight(firstString(eventMap, "tx.height"));
      if (Number.isNaN(height)) return { type: "malformed", reason: "tx without height" };
      const hash = firstString(eventMap, "tx.hash");
      return { type: "tx", id, height, txHash: hash?.toUpperCase(), eventMap: result.events };
    }
    case "tendermint/event/NewBlockEvents": {
      const height = parseHeight(value.height);
      if (Number.isNaN(height)) return { type: "malformed", reason: "block events without height" };
      return { type: "block", id, height, events: value.events };
    }
    case "tendermint/event/NewBlock": {
      const header = obj(obj(value.block)?.header);
      const height = parseHeight(header?.height);
      if (Number.isNaN(height)) return { type: "malformed", reason: "block without height" };
      return { type: "block", id, height, events: obj(value.result_finalize_block)?.events };
    }
    case "tendermint/event/NewBlockHeader": {
      const height = parseHeight(obj(value.header)?.height);
      if (Number.isNaN(height)) return { type: "malformed", reason: "header without height" };
      return { type: "block", id, height, events: undefined };
    }
    default:
      return { type: "malformed", reason: `unknown event data type ${data.type.slice(0, 64)}` };
  }
}
