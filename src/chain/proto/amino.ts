/**
 * Legacy amino JSON for our Msgs (`lifted/billing/<Msg>`, `lifted/sku/<Msg>`), derived from the
 * same field tables as the binary codecs: snake_case keys, empty fields omitted, uint64 as
 * decimal strings, bytes as base64. Only needed for SIGN_MODE_LEGACY_AMINO_JSON signers
 * (e.g. hardware wallets); everything else uses SIGN_MODE_DIRECT.
 */
import type { AminoConverter } from "@cosmjs/stargate";
import type { FieldSpec, MessageCodec } from "./codec.ts";

const snake = (camel: string): string => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function isEmpty(spec: FieldSpec<unknown>, value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (spec.repeated) return (value as unknown[]).length === 0;
  if (spec.kind === "bytes") return (value as Uint8Array).length === 0;
  return value === "" || value === 0 || value === 0n || value === false;
}

function oneToAmino(spec: FieldSpec<unknown>, value: unknown): unknown {
  switch (spec.kind) {
    case "message":
      return toAminoJson(spec.codec!, value);
    case "uint64":
      return String(value);
    case "bytes":
      return Buffer.from(value as Uint8Array).toString("base64");
    default:
      return value;
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
  const out: Record<string, unknown> = {};
  const record = value as Record<string, unknown>;
  for (const [name, spec] of Object.entries(codec.fields)) {
    const v = record[name];
    if (isEmpty(spec, v)) continue;
    out[snake(name)] = spec.repeated ? (v as unknown[]).map((x) => oneToAmino(spec, x)) : oneToAmino(spec, v);
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
