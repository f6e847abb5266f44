/**
 * Legacy amino JSON for our Msgs (`lifted/billing/<Msg>`, `lifted/sku/<Msg>`), derived from the
 * same field tables as the binary codecs, byte for byte as the chain's published amino
 * converters (manifestjs, telescope-generated) write a decoded message:
 * - keys are the proto (snake_case) names;
 * - a string is left out when empty, a uint64 when 0 (else a decimal string), a uint32 or
 *   enum when 0 (else a number), a bool when false;
 * - bytes are always written, as base64 ("" when empty, e.g. an empty `meta_hash` or `key`);
 * - a repeated field is always written, `[]` when empty;
 * - a sub-message is left out when unset, unless it is non-nullable on the chain (`required`:
 *   `amount`, `base_price`, `params`), which is always written; a Coin always has `amount`.
 * Wallets (Keplr, Ledger, cosmos-kit) sign these with SIGN_MODE_LEGACY_AMINO_JSON.
 */
import type { AminoConverter } from "@cosmjs/stargate";
import type { FieldSpec, MessageCodec } from "./codec.ts";

const COIN_URL = "/cosmos.base.v1beta1.Coin";

const snake = (camel: string): string => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function oneToAmino(spec: FieldSpec<unknown>, value: unknown): unknown {
  switch (spec.kind) {
    case "message":
      return toAminoJson(spec.codec!, value ?? spec.codec!.fromPartial({} as never));
    case "uint64":
      return String(value);
    case "bytes":
      return Buffer.from(value as Uint8Array).toString("base64");
    default:
      return value;
  }
}

/** Whether a singular field is left out of the JSON. */
function omitted(spec: FieldSpec<unknown>, value: unknown): boolean {
  switch (spec.kind) {
    case "message":
      return !spec.required && (value === undefined || value === null);
    case "bytes":
      return false;
    case "string":
      return value === "" || value === undefined;
    case "uint64":
      return value === 0n || value === undefined;
    case "bool":
      return value === false || value === undefined;
    default:
      return value === 0 || value === undefined;
  }
}

function oneFromAmino(spec: FieldSpec<unknown>, value: unknown): unknown {
  switch (spec.kind) {
    case "message":
      return fromAminoJson(spec.codec!, value as Record<string, unknown>);
    case "uint64":
      return BigInt(value as string);
    case "bytes":
      return new Uint8Array(Buffer.from(value as string, "base64"));
    default:
      return value;
  }
}

export function toAminoJson(codec: MessageCodec<unknown>, value: unknown): Record<string, unknown> {
  const record = (value ?? {}) as Record<string, unknown>;
  if (codec.typeUrl === COIN_URL) {
    // cosmos.base.v1beta1.Coin: `amount` is written even when empty (amino dont_omitempty).
    const denom = record.denom as string | undefined;
    return { ...(denom ? { denom } : {}), amount: (record.amount as string | undefined) ?? "" };
  }
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(codec.fields)) {
    const v = record[name];
    if (spec.repeated)
      out[snake(name)] = ((v as unknown[] | undefined) ?? []).map((x) => oneToAmino(spec, x));
    else if (!omitted(spec, v)) out[snake(name)] = oneToAmino(spec, v);
  }
  return out;
}

export function fromAminoJson(codec: MessageCodec<unknown>, json: Record<string, unknown>): unknown {
  const partial: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(codec.fields)) {
    const v = json[snake(name)];
    if (v === undefined || v === null) continue;
    partial[name] = spec.repeated
      ? (v as unknown[]).map((x) => oneFromAmino(spec, x))
      : oneFromAmino(spec, v);
  }
  return codec.fromPartial(partial as never);
}

/** `lifted/<module>/<MsgName>` from a type URL like `/liftedinit.billing.v1.MsgWithdraw`. */
export function aminoTypeOf(typeUrl: string): string {
  const parts = typeUrl.slice(1).split(".");
  return `lifted/${parts[1]}/${parts[parts.length - 1]}`;
}

export function aminoConvertersFor(codecs: readonly MessageCodec<unknown>[]): Record<string, AminoConverter> {
  const out: Record<string, AminoConverter> = {};
  for (const codec of codecs) {
    out[codec.typeUrl] = {
      aminoType: aminoTypeOf(codec.typeUrl),
      toAmino: (value: unknown) => toAminoJson(codec, value),
      fromAmino: (json: Record<string, unknown>) => fromAminoJson(codec, json),
    };
  }
  return out;
}
