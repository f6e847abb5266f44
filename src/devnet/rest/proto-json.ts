/**
 * Protobuf messages → the JSON the Cosmos SDK v0.50 gRPC-gateway writes (gogoproto jsonpb with
 * OrigName and EmitDefaults): the proto's snake_case field names, every field present (unset
 * messages and empty bytes as null), 64-bit integers as strings, bytes as base64, enums by
 * name, Timestamps as RFC 3339, and an `Any` replaced by its decoded message with `@type` first.
 *
 * Two kinds of codec reach this: cosmjs-types (ts-proto: decode gives every field with its
 * default, toJSON turns enums into names) and our field-table codecs for billing and sku
 * (src/chain/proto/codec.ts), whose table says each field's kind.
 */
import { defaultRegistryTypes } from "@cosmjs/stargate";
import { BaseAccount, ModuleAccount } from "cosmjs-types/cosmos/auth/v1beta1/auth";
import { GenericAuthorization } from "cosmjs-types/cosmos/authz/v1beta1/authz";
import { MsgExecResponse, MsgGrantResponse, MsgRevokeResponse } from "cosmjs-types/cosmos/authz/v1beta1/tx";
import { SendAuthorization } from "cosmjs-types/cosmos/bank/v1beta1/authz";
import { MsgMultiSendResponse, MsgSendResponse } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { PubKey as Ed25519PubKey } from "cosmjs-types/cosmos/crypto/ed25519/keys";
import { LegacyAminoPubKey } from "cosmjs-types/cosmos/crypto/multisig/keys";
import { PubKey as Secp256k1PubKey } from "cosmjs-types/cosmos/crypto/secp256k1/keys";
import { Tx } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import type { FieldSpec, MessageCodec } from "../../chain/proto/index.ts";
import { billingRegistryTypes, Timestamp } from "../../chain/proto/index.ts";
import { enumName } from "./enums.ts";

/** A cosmjs-types message object (ts-proto output). */
export interface TsProtoCodec<T = unknown> {
  readonly typeUrl?: string;
  decode(bytes: Uint8Array): T;
  encode(message: T): { finish(): Uint8Array };
  fromPartial(object: unknown): T;
  toJSON(message: T): unknown;
}

export type AnyCodec = TsProtoCodec | MessageCodec<unknown>;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const ANY_TYPES: ReadonlyArray<readonly [string, unknown]> = [
  ...defaultRegistryTypes,
  ...billingRegistryTypes,
  ["/cosmos.auth.v1beta1.BaseAccount", BaseAccount],
  ["/cosmos.auth.v1beta1.ModuleAccount", ModuleAccount],
  ["/cosmos.authz.v1beta1.GenericAuthorization", GenericAuthorization],
  ["/cosmos.bank.v1beta1.SendAuthorization", SendAuthorization],
  ["/cosmos.crypto.secp256k1.PubKey", Secp256k1PubKey],
  ["/cosmos.crypto.ed25519.PubKey", Ed25519PubKey],
  ["/cosmos.crypto.multisig.LegacyAminoPubKey", LegacyAminoPubKey],
  ["/cosmos.tx.v1beta1.Tx", Tx],
  // Message responses (a simulation's msg_responses).
  ["/cosmos.bank.v1beta1.MsgSendResponse", MsgSendResponse],
  ["/cosmos.bank.v1beta1.MsgMultiSendResponse", MsgMultiSendResponse],
  ["/cosmos.authz.v1beta1.MsgGrantResponse", MsgGrantResponse],
  ["/cosmos.authz.v1beta1.MsgRevokeResponse", MsgRevokeResponse],
  ["/cosmos.authz.v1beta1.MsgExecResponse", MsgExecResponse],
];
const anyCodecs = new Map(ANY_TYPES.map(([url, codec]) => [url, codec as AnyCodec]));

function isFieldTable(codec: AnyCodec): codec is MessageCodec<unknown> {
  return "fields" in codec;
}

/** `createdAt` → `created_at`: ts-proto and our tables name fields in lowerCamel of the proto name. */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

export function camelCase(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** jsonpb's fraction of a Timestamp or Duration: none, or 3, 6 or 9 digits. */
function fraction(nanos: number): string {
  if (nanos === 0) return "";
  const digits = String(nanos).padStart(9, "0");
  return `.${digits.endsWith("000000") ? digits.slice(0, 3) : digits.endsWith("000") ? digits.slice(0, 6) : digits}`;
}

/** A Timestamp as jsonpb writes it: RFC 3339 in UTC. */
export function timestampJson(t: { seconds: bigint; nanos: number }): string {
  const whole = new Date(Number(t.seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, "");
  return `${whole}${fraction(t.nanos)}Z`;
}

function bytesJson(b: Uint8Array): Json {
  // gogoproto decodes an absent bytes field as nil, which jsonpb writes as null.
  return b.length === 0 ? null : Buffer.from(b).toString("base64");
}

/** The gateway JSON of one encoded message of type `typeUrl` (an `Any`'s payload). */
export function anyJson(any: { typeUrl: string; value: Uint8Array }): Json {
  const codec = anyCodecs.get(any.typeUrl);
  if (codec === undefined) return { "@type": any.typeUrl, value: bytesJson(any.value) };
  const body = messageJson(codec, codec.decode(any.value)) as Record<string, Json>;
  return { "@type": any.typeUrl, ...body };
}

/** The gateway JSON of a decoded message. */
export function messageJson(codec: AnyCodec, message: unknown): Json {
  if (isFieldTable(codec)) return tableJson(codec, message as Record<string, unknown>);
  return tsProtoJson(message, codec.toJSON(message));
}

function tableJson(codec: MessageCodec<unknown>, message: Record<string, unknown>): Json {
  const out: Record<string, Json> = {};
  for (const [name, spec] of Object.entries(codec.fields) as [string, FieldSpec<unknown>][]) {
    const value = message[name];
    const one = (v: unknown): Json => tableValue(codec, name, spec, v);
    out[snakeCase(name)] = spec.repeated ? ((value as unknown[]) ?? []).map(one) : one(value);
  }
  return out;
}

function tableValue(owner: MessageCodec<unknown>, name: string, spec: FieldSpec<unknown>, v: unknown): Json {
  switch (spec.kind) {
    case "string":
    case "bool":
    case "uint32":
      return v as Json;
    case "uint64":
      return String(v);
    case "bytes":
      return bytesJson(v as Uint8Array);
    case "enum":
      return enumName(owner.typeUrl, name, v as number) ?? (v as number);
    case "message":
      if (v === undefined || v === null) return null;
      if (spec.codec === (Timestamp as MessageCodec<unknown>))
        return timestampJson(v as { seconds: bigint; nanos: number });
      return messageJson(spec.codec!, v);
  }
}

/** Members of the oneofs that reach the gateway JSON (cosmos.tx.v1beta1.ModeInfo's `sum`). */
const ONEOF_MEMBERS = new Set(["single", "multi"]);

function isAny(v: object): v is { typeUrl: string; value: Uint8Array } {
  const keys = Object.keys(v);
  return (
    keys.length === 2 &&
    typeof (v as { typeUrl?: unknown }).typeUrl === "string" &&
    (v as { value?: unknown }).value instanceof Uint8Array
  );
}

function isSecondsNanos(v: object): v is { seconds: bigint; nanos: number } {
  const keys = Object.keys(v);
  return keys.length === 2 && typeof (v as { seconds?: unknown }).seconds === "bigint" && "nanos" in v;
}

/**
 * Walks a ts-proto message beside its own toJSON output: the decoded object has every field
 * (defaults included, unset messages as undefined) and the toJSON tree tells an enum (a name
 * there) from an integer, and a Timestamp (an RFC 3339 string there) from a Duration.
 */
function tsProtoJson(v: unknown, j: unknown): Json {
  if (v === undefined || v === null) return null;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") return typeof j === "string" ? j : v;
  if (typeof v === "string" || typeof v === "boolean") return v;
  if (v instanceof Uint8Array) return bytesJson(v);
  if (Array.isArray(v)) return v.map((item, i) => tsProtoJson(item, Array.isArray(j) ? j[i] : undefined));
  if (typeof v === "object") {
    if (isAny(v)) return anyJson(v);
    if (isSecondsNanos(v)) {
      if (typeof j === "string") return timestampJson(v);
      return `${v.seconds}${fraction(v.nanos)}s`;
    }
    const out: Record<string, Json> = {};
    const jo = (typeof j === "object" && j !== null ? j : {}) as Record<string, unknown>;
    for (const [key, value] of Object.entries(v)) {
      // jsonpb leaves out the members of a oneof that are not set (EmitDefaults or not).
      if (value === undefined && ONEOF_MEMBERS.has(key)) continue;
      out[snakeCase(key)] = tsProtoJson(value, jo[key]);
    }
    return out;
  }
  return null;
}
