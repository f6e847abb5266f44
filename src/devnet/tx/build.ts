/**
 * Builds and signs SIGN_MODE_DIRECT txs without a cosmjs client: the fast path for
 * benchmarks and for tests that need deliberately wrong txs (bad chain id, stale sequence,
 * foreign signature).
 */
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import type { Coin } from "cosmjs-types/cosmos/base/v1beta1/coin";
import { PubKey } from "cosmjs-types/cosmos/crypto/secp256k1/keys";
import { SignMode } from "cosmjs-types/cosmos/tx/signing/v1beta1/signing";
import { AuthInfo, TxBody, TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import type { Any } from "cosmjs-types/google/protobuf/any";
import { SECP256K1_PUBKEY_URL } from "../modules/auth/index.ts";
import { signBytes } from "./verify.ts";

export interface SignerSpec {
  privateKey: Uint8Array;
  accountNumber: bigint;
  sequence: bigint;
}

export interface BuildTxOptions {
  chainId: string;
  messages: Any[];
  signers: SignerSpec[];
  fee: { amount: Coin[]; gasLimit: bigint };
  memo?: string;
  timeoutHeight?: bigint;
}

export function buildSignedTx(opts: BuildTxOptions): Uint8Array {
  const bodyBytes = TxBody.encode(
    TxBody.fromPartial({
      messages: opts.messages,
      memo: opts.memo ?? "",
      timeoutHeight: opts.timeoutHeight ?? 0n,
    }),
  ).finish();
  const authInfoBytes = AuthInfo.encode(
    AuthInfo.fromPartial({
      signerInfos: opts.signers.map((s) => ({
        publicKey: {
          typeUrl: SECP256K1_PUBKEY_URL,
          value: PubKey.encode({ key: secp256k1.getPublicKey(s.privateKey, true) }).finish(),
        },
        modeInfo: { single: { mode: SignMode.SIGN_MODE_DIRECT } },
        sequence: s.sequence,
      })),
      fee: { amount: opts.fee.amount, gasLimit: opts.fee.gasLimit, payer: "", granter: "" },
    }),
  ).finish();
  const signatures = opts.signers.map((s) => {
    const digest = sha256(signBytes(bodyBytes, authInfoBytes, opts.chainId, s.accountNumber));
    return secp256k1.sign(digest, s.privateKey, { prehash: false, lowS: true, format: "compact" });
  });
  return TxRaw.encode({ bodyBytes, authInfoBytes, signatures }).finish();
}
