/**
 * What both sides of a SIGN_MODE_LEGACY_AMINO_JSON signature need, in one place: the message
 * registry, the amino converters of every message the devnet serves (cosmjs' defaults for
 * x/bank, the authz converters cosmjs lacks, ours for x/billing and x/sku) and the sign
 * bytes: the sorted, escaped JSON of the StdSignDoc, exactly as wallets serialise it.
 */
import { type AminoMsg, makeSignDoc, type StdFee, serializeSignDoc } from "@cosmjs/amino";
import { type EncodeObject, Registry } from "@cosmjs/proto-signing";
import {
  type AminoConverter,
  AminoTypes,
  createDefaultAminoConverters,
  defaultRegistryTypes,
} from "@cosmjs/stargate";
import { GenericAuthorization } from "cosmjs-types/cosmos/authz/v1beta1/authz";
import type { MsgExec, MsgGrant, MsgRevoke } from "cosmjs-types/cosmos/authz/v1beta1/tx";
import type { Any } from "cosmjs-types/google/protobuf/any";
import type { Timestamp } from "cosmjs-types/google/protobuf/timestamp";
import { billingAminoConverters, billingRegistryTypes } from "./proto/index.ts";

const GENERIC_URL = "/cosmos.authz.v1beta1.GenericAuthorization";
const GENERIC_AMINO = "cosmos-sdk/GenericAuthorization";

/** cosmjs Registry with the SDK's default types plus our billing/sku codecs. */
export function chainRegistry(): Registry {
  return new Registry([...defaultRegistryTypes, ...billingRegistryTypes]);
}

/** Protobuf JSON time: RFC 3339 in UTC, fractional seconds only when present (0, 3, 6 or 9 digits). */
function timestampJson(t: Timestamp): string {
  const whole = new Date(Number(t.seconds) * 1000).toISOString().replace(/\.000Z$/, "");
  if (t.nanos === 0) return `${whole}Z`;
  const frac = String(t.nanos).padStart(9, "0");
  const digits = frac.endsWith("000000") ? 3 : frac.endsWith("000") ? 6 : 9;
  return `${whole}.${frac.slice(0, digits)}Z`;
}

function timestampFromJson(text: string): Timestamp {
  const m = /^(.*?)(?:\.(\d{1,9}))?Z$/.exec(text);
  if (m === null) throw new Error(`invalid timestamp ${JSON.stringify(text)}`);
  return {
    seconds: BigInt(Date.parse(`${m[1]}Z`) / 1000),
    nanos: Number((m[2] ?? "").padEnd(9, "0")),
  };
}

interface InnerMsgs {
  toAmino(any: Any): AminoMsg;
  fromAmino(msg: AminoMsg): Any;
}

const omitEmpty = (key: string, value: string) => (value === "" ? {} : { [key]: value });

/** x/authz's amino forms (cosmos-sdk/MsgGrant, /MsgExec, /MsgRevoke), as the chain's converters write them. */
function authzAminoConverters(inner: InnerMsgs): Record<string, AminoConverter> {
  return {
    "/cosmos.authz.v1beta1.MsgGrant": {
      aminoType: "cosmos-sdk/MsgGrant",
      toAmino: (m: MsgGrant) => {
        const auth = m.grant?.authorization;
        if (auth !== undefined && auth.typeUrl !== GENERIC_URL)
          throw new Error(`no amino form for authorization ${auth.typeUrl}`);
        const grant: Record<string, unknown> = {};
        if (auth !== undefined)
          grant.authorization = {
            type: GENERIC_AMINO,
            value: omitEmpty("msg", GenericAuthorization.decode(auth.value).msg),
          };
        if (m.grant?.expiration !== undefined) grant.expiration = timestampJson(m.grant.expiration);
        return { ...omitEmpty("granter", m.granter), ...omitEmpty("grantee", m.grantee), grant };
      },
      fromAmino: (j: { granter?: string; grantee?: string; grant?: Record<string, unknown> }) => {
        const auth = j.grant?.authorization as { type: string; value: { msg?: string } } | undefined;
        if (auth !== undefined && auth.type !== GENERIC_AMINO)
          throw new Error(`no amino form for authorization ${auth.type}`);
        const expiration = j.grant?.expiration as string | undefined;
        return {
          granter: j.granter ?? "",
          grantee: j.grantee ?? "",
          grant: {
            authorization:
              auth === undefined
                ? undefined
                : {
                    typeUrl: GENERIC_URL,
                    value: GenericAuthorization.encode({ msg: auth.value.msg ?? "" }).finish(),
                  },
            expiration: expiration === undefined ? undefined : timestampFromJson(expiration),
          },
        };
      },
    },
    "/cosmos.authz.v1beta1.MsgExec": {
      aminoType: "cosmos-sdk/MsgExec",
      toAmino: (m: MsgExec) => ({ ...omitEmpty("grantee", m.grantee), msgs: m.msgs.map(inner.toAmino) }),
      fromAmino: (j: { grantee?: string; msgs?: AminoMsg[] }) => ({
        grantee: j.grantee ?? "",
        msgs: (j.msgs ?? []).map(inner.fromAmino),
      }),
    },
    "/cosmos.authz.v1beta1.MsgRevoke": {
      aminoType: "cosmos-sdk/MsgRevoke",
      toAmino: (m: MsgRevoke) => ({
        ...omitEmpty("granter", m.granter),
        ...omitEmpty("grantee", m.grantee),
        ...omitEmpty("msg_type_url", m.msgTypeUrl),
      }),
      fromAmino: (j: { granter?: string; grantee?: string; msg_type_url?: string }) => ({
        granter: j.granter ?? "",
        grantee: j.grantee ?? "",
        msgTypeUrl: j.msg_type_url ?? "",
      }),
    },
  };
}

/** AminoTypes for every message of the chain: the input of an amino signer (SigningStargateClient's `aminoTypes`). */
export function chainAminoTypes(registry: Registry = chainRegistry()): AminoTypes {
  const inner: InnerMsgs = {
    toAmino: (any) => types.toAmino({ typeUrl: any.typeUrl, value: registry.decode(any) }),
    fromAmino: (msg) => registry.encodeAsAny(types.fromAmino(msg)),
  };
  const types: AminoTypes = new AminoTypes({
    ...createDefaultAminoConverters(),
    ...authzAminoConverters(inner),
    ...billingAminoConverters,
  });
  return types;
}

export interface AminoSignInput {
  aminoTypes: AminoTypes;
  messages: readonly EncodeObject[];
  fee: StdFee;
  chainId: string;
  memo: string;
  accountNumber: bigint;
  sequence: bigint;
  timeoutHeight?: bigint;
}

/** The bytes an amino signer signs (sha256 of them, secp256k1): the serialised StdSignDoc. */
export function aminoSignBytes(input: AminoSignInput): Uint8Array {
  const msgs = input.messages.map((m) => input.aminoTypes.toAmino(m));
  const timeout =
    input.timeoutHeight !== undefined && input.timeoutHeight > 0n ? input.timeoutHeight : undefined;
  const doc = makeSignDoc(
    msgs,
    input.fee,
    input.chainId,
    input.memo,
    input.accountNumber,
    input.sequence.toString(),
    timeout,
  );
  return serializeSignDoc(doc);
}
