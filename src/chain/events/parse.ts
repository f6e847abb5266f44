/**
 * Decoding what the CometBFT websocket sends, in two steps: `classifyFrame` tells what one
 * JSON-RPC 2.0 message is (ack, error, tx or block notification), and `parseTxEventMap` /
 * `parseAbciEvents` turn the events it carries into typed lease events. Pure code.
 *
 * Frames. Subscription pushes reuse the subscribe request's id and carry `result.query`;
 * the subscribe acknowledgement is `result: {}`; failures are `error: {code, message, data}`.
 *
 * Events. Two input shapes exist:
 *  - Tx notifications carry `result.events`, a flattened map "<type>.<attr>" → values in
 *    emission order; repeated events of one type become parallel ("lockstep") arrays, so
 *    index i of `lease_created.lease_uuid`, `.provider_uuid` and `.tenant` describe one lease.
 *  - Block events (NewBlockEvents, NewBlock's result_finalize_block, block_results'
 *    finalize_block_events) are lists of {type, attributes}: each event stands alone.
 * Filtering: lease_created/closed/expired only for our provider; lease_auto_closed only
 * with reason credit_exhausted, for every provider. Anything unusable is counted, never thrown.
 */
import { isCanonicalUuid } from "../../core/uuid.ts";
import {
  type AbciEvent,
  LEASE_EVENT_KINDS,
  type LeaseEvent,
  type LeaseEventKind,
  type ParseResult,
} from "./types.ts";

// ---- frames ----

/** One websocket message, classified. */
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

// ---- lease events ----

export const AUTO_CLOSE_REASON = "credit_exhausted";

const KIND_SET = new Set<string>(LEASE_EVENT_KINDS);

export function isLeaseEventKind(value: string): value is LeaseEventKind {
  return KIND_SET.has(value);
}

/** Reads the optional extra attribute each kind carries on every event of that kind. */
function reasonKey(kind: LeaseEventKind): string | undefined {
  if (kind === "lease_closed") return "closed_by";
  if (kind === "lease_expired" || kind === "lease_auto_closed") return "reason";
  return undefined;
}

function wanted(
  kind: LeaseEventKind,
  providerUuid: string,
  ourProvider: string,
  reason: string | undefined,
): boolean {
  if (kind === "lease_auto_closed") return reason === AUTO_CLOSE_REASON;
  return providerUuid === ourProvider;
}

function validTenant(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= 128;
}

function stringArray(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  for (const v of value) if (typeof v !== "string") return undefined;
  return value as string[];
}

/**
 * Extracts events of `kinds` from a Tx notification's flattened event map. A kind whose
 * lockstep arrays disagree in length cannot be paired safely: all its entries count as
 * malformed.
 */
export function parseTxEventMap(
  map: unknown,
  kinds: readonly LeaseEventKind[],
  ourProvider: string,
  height: number,
  txHash: string | undefined,
): ParseResult {
  const out: LeaseEvent[] = [];
  let malformed = 0;
  if (map === null || typeof map !== "object") return { events: out, malformed: 1 };
  const m = map as Record<string, unknown>;
  for (const kind of kinds) {
    const uuids = m[`${kind}.lease_uuid`];
    if (uuids === undefined) continue;
    const u = stringArray(uuids);
    const p = stringArray(m[`${kind}.provider_uuid`]);
    const t = stringArray(m[`${kind}.tenant`]);
    const rk = reasonKey(kind);
    const r = rk === undefined ? undefined : stringArray(m[`${kind}.${rk}`]);
    if (
      u === undefined ||
      p === undefined ||
      t === undefined ||
      p.length !== u.length ||
      t.length !== u.length
    ) {
      malformed += Math.max(Array.isArray(uuids) ? uuids.length : 1, 1);
      continue;
    }
    // The reason array is trusted only when it lines up; otherwise it is left out.
    const reasons = r !== undefined && r.length === u.length ? r : undefined;
    for (let i = 0; i < u.length; i++) {
      const leaseUuid = u[i] as string;
      const providerUuid = p[i] as string;
      const tenant = t[i] as string;
      if (!isCanonicalUuid(leaseUuid) || !isCanonicalUuid(providerUuid) || !validTenant(tenant)) {
        malformed++;
        continue;
      }
      const reason = reasons?.[i];
      if (kind === "lease_auto_closed" && reasons === undefined) {
        malformed++;
        continue;
      }
      if (!wanted(kind, providerUuid, ourProvider, reason)) continue;
      out.push({ kind, leaseUuid, providerUuid, tenant, height, txHash, reason });
    }
  }
  return { events: out, malformed };
}

/** Extracts lease events from a list of standalone ABCI events (block events). */
export function parseAbciEvents(
  list: unknown,
  kinds: readonly LeaseEventKind[],
  ourProvider: string,
  height: number,
  txHash: string | undefined,
): ParseResult {
  const out: LeaseEvent[] = [];
  let malformed = 0;
  if (list === null || list === undefined) return { events: out, malformed };
  if (!Array.isArray(list)) return { events: out, malformed: 1 };
  for (const raw of list as unknown[]) {
    if (raw === null || typeof raw !== "object") {
      malformed++;
      continue;
    }
    const ev = raw as Partial<AbciEvent>;
    if (typeof ev.type !== "string" || !isLeaseEventKind(ev.type) || !kinds.includes(ev.type)) continue;
    const kind = ev.type;
    const attrs = new Map<string, string>();
    if (Array.isArray(ev.attributes)) {
      for (const a of ev.attributes as unknown[]) {
        if (a === null || typeof a !== "object") continue;
        const { key, value } = a as { key?: unknown; value?: unknown };
        // First value wins: a repeated key inside one event is not something the chain emits.
        if (typeof key === "string" && typeof value === "string" && !attrs.has(key)) attrs.set(key, value);
      }
    }
    const leaseUuid = attrs.get("lease_uuid");
    const providerUuid = attrs.get("provider_uuid");
    const tenant = attrs.get("tenant");
    if (!isCanonicalUuid(leaseUuid) || !isCanonicalUuid(providerUuid) || !validTenant(tenant)) {
      malformed++;
      continue;
    }
    const rk = reasonKey(kind);
    const reason = rk === undefined ? undefined : attrs.get(rk);
    if (!wanted(kind, providerUuid, ourProvider, reason)) continue;
    out.push({ kind, leaseUuid, providerUuid, tenant, height, txHash, reason });
  }
  return { events: out, malformed };
}

/** A decimal height string or number from CometBFT JSON; NaN when unusable. */
export function parseHeight(value: unknown): number {
  if (typeof value === "number") return Number.isSafeInteger(value) && value >= 0 ? value : Number.NaN;
  if (typeof value === "string" && /^\d{1,15}$/.test(value)) return Number(value);
  return Number.NaN;
}
