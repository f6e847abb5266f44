/**
 * A signing key and the bytes it produces: signed txs (sha256 of the SignDoc in
 * SIGN_MODE_DIRECT, or of the amino JSON StdSignDoc in SIGN_MODE_LEGACY_AMINO_JSON, as
 * hardware and browser wallets sign; low-S compact secp256k1 signature) and the unsigned
 * form Simulate wants.
 */
import { encodeSecp256k1Pubkey } from "@cosmjs/amino";
import {
  type EncodeObject,
  encodePubkey,
  makeAuthInfoBytes,
  makeSignBytes,
  makeSignDoc,
  type Registry,
} from "@cosmjs/proto-signing";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { SignMode } from "cosmjs-types/cosmos/tx/signing/v1beta1/signing";
import { TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import { addressFromPubkey, DEFAULT_BECH32_PREFIX } from "../../auth/address.ts";
import { compressedPubkey } from "../../auth/keys.ts";
import { aminoSignBytes, chainAminoTypes } from "../proto/index.ts";

export { chainRegistry } from "../proto/index.ts";

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
  registry: Registry;
  signer: TxSigner;
  chainId: string;
  accountNumber: bigint;
  sequence: number;
  messages: readonly EncodeObject[];
  memo?: string;
  gas: number;
  fee: { denom: string; amount: string };
}

function bodyBytes(registry: Registry, messages: readonly EncodeObject[], memo: string): Uint8Array {
  return registry.encode({ typeUrl: "/cosmos.tx.v1beta1.TxBody", value: { messages, memo } });
}

function pubkeyAny(signer: TxSigner) {
  return encodePubkey(encodeSecp256k1Pubkey(signer.pubkey));
}

/** What the key signs: the SignDoc (direct) or the amino JSON StdSignDoc of the same tx. */
function signBytesFor(input: BuildTxInput, body: Uint8Array, authInfo: Uint8Array): Uint8Array {
  if (input.signer.signMode !== "amino-json")
    return makeSignBytes(makeSignDoc(body, authInfo, input.chainId, Number(input.accountNumber)));
  return aminoSignBytes({
    aminoTypes: chainAminoTypes(input.registry),
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
  const authInfo = makeAuthInfoBytes(
    [{ pubkey: pubkeyAny(input.signer), sequence: input.sequence }],
    [input.fee],
    input.gas,
    undefined,
    undefined,
    input.signer.signMode === "amino-json" ? SignMode.SIGN_MODE_LEGACY_AMINO_JSON : SignMode.SIGN_MODE_DIRECT,
  );
  const signature = secp256k1.sign(signBytesFor(input, body, authInfo), input.signer.privateKey);
  return TxRaw.encode(
    TxRaw.fromPartial({ bodyBytes: body, authInfoBytes: authInfo, signatures: [signature] }),
  ).finish();
}

/** The tx cosmjs sends to Simulate: empty fee, mode UNSPECIFIED, one empty signature. */
export function buildSimulationTx(
  registry: Registry,
  signer: TxSigner,
  sequence: number,
  messages: readonly EncodeObject[],
  memo = "",
): Uint8Array {
  const body = bodyBytes(registry, messages, memo);
  const authInfo = makeAuthInfoBytes(
    [{ pubkey: pubkeyAny(signer), sequence }],
    [],
    0,
    undefined,
    undefined,
    SignMode.SIGN_MODE_UNSPECIFIED,
  );
  return TxRaw.encode(
    TxRaw.fromPartial({ bodyBytes: body, authInfoBytes: authInfo, signatures: [new Uint8Array()] }),
  ).finish();
}
