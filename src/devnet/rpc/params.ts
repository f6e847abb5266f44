/** Parameter decoding for the CometBFT RPC: decimal strings (or numbers), base64, hex. */
import { RpcError } from "../node.ts";

export type Params = Record<string, unknown>;

export const invalidParams = (data: string) => new RpcError(-32602, "Invalid params", data);

/** Optional non-negative integer given as "12" or 12; undefined when absent, null or "". */
export function intParam(params: Params, name: string): number | undefined {
  const v = params[name];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return v;
  if (typeof v === "string" && /^[0-9]{1,15}$/.test(v)) return Number(v);
  throw invalidParams(`error converting json params to arguments: ${name} must be a non-negative integer`);
}

export function stringParam(params: Params, name: string, required: boolean): string | undefined {
  const v = params[name];
  if (v === undefined || v === null) {
    if (required) throw invalidParams(`error converting json params to arguments: missing ${name}`);
    return undefined;
  }
  if (typeof v !== "string")
    throw invalidParams(`error converting json params to arguments: ${name} must be a string`);
  return v;
}

export function boolParam(params: Params, name: string): boolean {
  const v = params[name];
  if (v === undefined || v === null) return false;
  if (typeof v === "boolean") return v;
  if (v === "true" || v === "false") return v === "true";
  throw invalidParams(`error converting json params to arguments: ${name} must be a boolean`);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function base64Param(params: Params, name: string): Buffer {
  const v = stringParam(params, name, true) as string;
  if (!BASE64.test(v))
    throw invalidParams(`error converting json params to arguments: ${name} is not valid base64`);
  return Buffer.from(v, "base64");
}

/** abci_query `data`: hex (an optional 0x prefix is accepted, as in URI requests). */
export function hexParam(params: Params, name: string): Buffer {
  const raw = stringParam(params, name, false) ?? "";
  const v = raw.startsWith("0x") ? raw.slice(2) : raw;
  if (v.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(v)) {
    throw invalidParams(`error converting json params to arguments: ${name} is not valid hex`);
  }
  return Buffer.from(v, "hex");
}

/** URI (GET) arguments: "quoted" strings, 0x hex, bare numbers and booleans. */
export function paramsFromQueryString(query: Record<string, unknown>): Params {
  const out: Params = {};
  for (const [k, raw] of Object.entries(query)) {
    if (typeof raw !== "string")
      throw invalidParams(`error converting http params to arguments: ${k} given twice`);
    if (raw.length >= 2 && raw.startsWith('"') && raw.endsWith('"')) out[k] = raw.slice(1, -1);
    else if (raw === "true" || raw === "false") out[k] = raw === "true";
    else out[k] = raw;
  }
  return out;
}
