/**
 * A signing key and the bytes it produces: signed txs (sha256 of the SignDoc in
 * SIGN_MODE_DIRECT, or of the amino JSON StdSignDoc in SIGN_MODE_LEGACY_AMINO_JSON, as
 * hardware and browser wallets sign; low-S compact secp256k1 signature) and the unsigned
 * form Simulate wants. The protobuf documents are built from cosmjs-types' codecs as
 * @cosmjs/proto-signing builds them, without loading it: providerd signs direct, and the
 * amino tables (chain/amino-signing.ts, with @cosmjs/stargate) load only for an amino-json signer.
 */
import type { EncodeObject } from "@cosmjs/proto-signing";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { PubKey } from "cosmjs-types/cosmos/crypto/secp256k1/keys";
import { SignMode } from "cosmjs-types/cosmos/tx/signing/v1beta1/signing";
import { AuthInfo, SignDoc, TxBody, TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import type { Any } from "cosmjs-types/google/protobuf/any";
import { addressFromPubkey, DEFAULT_BECH32_PREFIX } from "../../auth/address.ts";
import { compressedPubkey } from "../../auth/keys.ts";
import type { AminoSignInput } from "../amino-signing.ts";
import type { MessageEncoder } from "./tx-messages.ts";

/** `direct` (SIGN_MODE_DIRECT, the default) or `amino-json` (SIGN_MODE_LEGACY_AMINO_JSON). */
export type SignModeName = "direct" | "amino-json";

export interface TxSigner {
  readonly address: string;
  readonly pubkey: Uint8Array;
  readonly privateKey: Uint8Array;
  readonly signMode?: SignModeName;
}

export function signerFromKey(
  privateKey: Uint8Array,
  prefix = DEFAULT_BECH32_PREFIX,
  signMode: SignModeName = "direct",
): TxSigner {
  const pubkey = compressedPubkey(privateKey);
  return { address: addressFromPubkey(pubkey, prefix), pubkey, privateKey, signMode };
}

export interface BuildTxInput {
  /** Encodes the messages (tx-messages.ts's messageEncoderFor, or a cosmjs Registry). */
  registry: MessageEncoder;
  signer: TxSigner;
  chainId: string;
  accountNumber: bigint;
  sequence: number;
  messages: readonly EncodeObject[];
  memo?: string;
  gas: number;
  fee: { denom: string; amount: string };
  /** An amino-json signer's sign bytes (`aminoSignBytesLoader()`); a direct signer needs none. */
  aminoSignBytes?: AminoSignBytes;
}

export type AminoSignBytes = (input: Omit<AminoSignInput, "aminoTypes">) => Uint8Array;

let aminoLoad: Promise<AminoSignBytes> | undefined;

/** The amino StdSignDoc bytes of a tx, with the amino converters of every chain message (loaded once). */
export function aminoSignBytesLoader(): Promise<AminoSignBytes> {
  aminoLoad ??= import("../amino-signing.ts").then((m) => {
    const aminoTypes = m.chainAminoTypes();
    return (input) => m.aminoSignBytes({ ...input, aminoTypes });
  });
  return aminoLoad;
}

function bodyBytes(registry: MessageEncoder, messages: readonly EncodeObject[], memo: string): Uint8Array {
  const body = TxBody.fromPartial({ messages: messages.map((m) => registry.encodeAsAny(m)), memo });
  return TxBody.encode(body).finish();
}

function pubkeyAny(signer: TxSigner): Any {
  return {
    typeUrl: "/cosmos.crypto.secp256k1.PubKey",
    value: PubKey.encode({ key: signer.pubkey }).finish(),
  };
}

/** The AuthInfo of a one-signer tx: its key, sequence and sign mode, and the fee. */
function authInfoBytes(
  signer: TxSigner,
  sequence: number,
  fee: readonly { denom: string; amount: string }[],
  gas: number,
  mode: SignMode,
): Uint8Array {
  const authInfo = AuthInfo.fromPartial({
    signerInfos: [
      { publicKey: pubkeyAny(signer), modeInfo: { single: { mode } }, sequence: BigInt(sequence) },
    ],
    fee: { amount: [...fee], gasLimit: BigInt(gas) },
  });
  return AuthInfo.encode(authInfo).finish();
}

/** What the key signs: the SignDoc (direct) or the amino JSON StdSignDoc of the same tx. */
function signBytesFor(input: BuildTxInput, body: Uint8Array, authInfo: Uint8Array): Uint8Array {
  if (input.signer.signMode !== "amino-json") {
    const doc = SignDoc.fromPartial({
      bodyBytes: body,
      authInfoBytes: authInfo,
      chainId: input.chainId,
      accountNumber: input.accountNumber,
    });
    return SignDoc.encode(doc).finish();
  }
  if (input.aminoSignBytes === undefined)
    throw new Error("an amino-json signer needs aminoSignBytes (aminoSignBytesLoader())");
  return input.aminoSignBytes({
    messages: input.messages,
    fee: { amount: [input.fee], gas: String(input.gas) },
    chainId: input.chainId,
    memo: input.memo ?? "",
    accountNumber: input.accountNumber,
    sequence: BigInt(input.sequence),
  });
}

/** A signed TxRaw, ready for broadcast_tx_sync. */
export function buildSignedTx(input: BuildTxInput): Uint8Array {
  const body = bodyBytes(input.registry, input.messages, input.memo ?? "");
  const mode =
    input.signer.signMode === "amino-json" ? SignMode.SIGN_MODE_LEGACY_AMINO_JSON : SignMode.SIGN_MODE_DIRECT;
  const authInfo = authInfoBytes(input.signer, input.sequence, [input.fee], input.gas, mode);
  const signature = secp256k1.sign(signBytesFor(input, body, authInfo), input.signer.privateKey);
  return TxRaw.encode(
    TxRaw.fromPartial({ bodyBytes: body, authInfoBytes: authInfo, signatures: [signature] }),
  ).finish();
}

/** The tx cosmjs sends to Simulate: empty fee, mode UNSPECIFIED, one empty signature. */
export function buildSimulationTx(
  registry: MessageEncoder,
  signer: TxSigner,
  sequence: number,
  messages: readonly EncodeObject[],
  memo = "",
): Uint8Array {
  const body = bodyBytes(registry, messages, memo);
  const authInfo = authInfoBytes(signer, sequence, [], 0, SignMode.SIGN_MODE_UNSPECIFIED);
  return TxRaw.encode(
    TxRaw.fromPartial({ bodyBytes: body, authInfoBytes: authInfo, signatures: [new Uint8Array()] }),
  ).finish();
}
