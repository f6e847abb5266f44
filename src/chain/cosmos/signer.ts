/**
 * A signing key and the bytes it produces: SIGN_MODE_DIRECT txs (sha256 of the SignDoc,
 * low-S compact secp256k1 signature) and the unsigned form Simulate wants.
 */
import { encodeSecp256k1Pubkey } from "@cosmjs/amino";
import {
  Registry as CosmRegistry,
  type EncodeObject,
  encodePubkey,
  makeAuthInfoBytes,
  makeSignBytes,
  makeSignDoc,
  type Registry,
} from "@cosmjs/proto-signing";
import { defaultRegistryTypes } from "@cosmjs/stargate";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { SignMode } from "cosmjs-types/cosmos/tx/signing/v1beta1/signing";
import { TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import { addressFromPubkey, DEFAULT_BECH32_PREFIX } from "../../auth/address.ts";
import { compressedPubkey } from "../../auth/keys.ts";
import { billingRegistryTypes } from "../proto/index.ts";

export interface TxSigner {
  readonly address: string;
  readonly pubkey: Uint8Array;
  readonly privateKey: Uint8Array;
}

export function signerFromKey(privateKey: Uint8Array, prefix = DEFAULT_BECH32_PREFIX): TxSigner {
  const pubkey = compressedPubkey(privateKey);
  return { address: addressFromPubkey(pubkey, prefix), pubkey, privateKey };
}

/** cosmjs Registry with the SDK's default types plus our billing/sku codecs. */
export function chainRegistry(): Registry {
  return new CosmRegistry([...defaultRegistryTypes, ...billingRegistryTypes]);
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

/** A signed TxRaw, ready for broadcast_tx_sync. */
export function buildSignedTx(input: BuildTxInput): Uint8Array {
  const body = bodyBytes(input.registry, input.messages, input.memo ?? "");
  const authInfo = makeAuthInfoBytes(
    [{ pubkey: pubkeyAny(input.signer), sequence: input.sequence }],
    [input.fee],
    input.gas,
    undefined,
    undefined,
    SignMode.SIGN_MODE_DIRECT,
  );
  const doc = makeSignDoc(body, authInfo, input.chainId, Number(input.accountNumber));
  const signature = secp256k1.sign(makeSignBytes(doc), input.signer.privateKey);
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
