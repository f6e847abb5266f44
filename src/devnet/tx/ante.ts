/**
 * The SDK v0.50 ante chain, in its order: basic tx checks, timeout height, memo, gas for tx
 * size, fee check (CheckTx only) and deduction, public keys, signature gas, signature and
 * sequence checks, sequence increment. Errors and events are worded as the SDK words them.
 */

import { PubKey } from "cosmjs-types/cosmos/crypto/secp256k1/keys";
import { coinsToString, validateCoins } from "../coins.ts";
import { type ChainError, sdkErrors } from "../errors.ts";
import { type GasPrice, requiredFee } from "../gas-price.ts";
import type { ExecContext } from "../module.ts";
import { SECP256K1_PUBKEY_URL } from "../modules/auth/index.ts";
import type { AuthKeeper } from "../modules/auth/types.ts";
import type { BankKeeper } from "../modules/bank/types.ts";
import type { DecodedTx } from "./decode.ts";
import { addressOfPubkey, signBytes, verifySecp256k1 } from "./verify.ts";

export const ANTE_GAS = {
  txSizeCostPerByte: 10,
  sigVerifyCostSecp256k1: 1000,
  /** Bytes the SDK adds per signer while simulating (a signature and public key not yet present). */
  simulatedSignerBytes: 110,
  maxMemoCharacters: 256,
  txSigLimit: 7,
  /** Reading auth params (several decorators do), charged as a read of a params record. */
  paramsRead: 1000 + 3 * 40,
} as const;

const SIGN_MODE_DIRECT = 1;
const SIGN_MODE_LEGACY_AMINO_JSON = 127;

export interface AnteDeps {
  auth: AuthKeeper;
  bank: BankKeeper;
  chainId: string;
  bech32Prefix: string;
  minGasPrice: GasPrice;
  feeCollector: string;
  /** The StdSignDoc JSON bytes of a SIGN_MODE_LEGACY_AMINO_JSON signer (throws if a message has no amino form). */
  aminoSignBytes(tx: DecodedTx, accountNumber: bigint, sequence: bigint): Uint8Array;
}

export function validateTxBasic(tx: DecodedTx): void {
  if (tx.msgs.length === 0) throw sdkErrors.invalidRequest.wrap("must contain at least one message");
  const fee = tx.authInfo.fee;
  if (fee) validateCoins(fee.amount, true);
  if (tx.raw.signatures.length === 0) throw sdkErrors.noSignatures.error();
  if (tx.raw.signatures.length !== tx.signers.length) {
    throw sdkErrors.unauthorized.wrap(
      `wrong number of signers; expected ${tx.signers.length}, got ${tx.raw.signatures.length}`,
    );
  }
  if (tx.authInfo.signerInfos.length !== tx.signers.length) {
    throw sdkErrors.unauthorized.wrap(
      `wrong number of signers; expected ${tx.signers.length}, got ${tx.authInfo.signerInfos.length}`,
    );
  }
  for (const m of tx.msgs) m.handler.validateBasic?.(m.msg);
}

export function runAnte(ctx: ExecContext, tx: DecodedTx, deps: AnteDeps): void {
  const simulate = ctx.mode === "simulate";
  validateTxBasic(tx);
  const timeout = tx.body.timeoutHeight;
  if (timeout > 0n && BigInt(ctx.block.height) > timeout) {
    throw sdkErrors.txTimeoutHeight.wrap(`block height: ${ctx.block.height}, timeout height: ${timeout}`);
  }
  ctx.gas.consume(ANTE_GAS.paramsRead, "params");
  if ([...tx.body.memo].length > ANTE_GAS.maxMemoCharacters) {
    throw sdkErrors.memoTooLarge.wrap(
      `maximum number of characters is ${ANTE_GAS.maxMemoCharacters} but received ${[...tx.body.memo].length} characters`,
    );
  }
  ctx.gas.consume(ANTE_GAS.paramsRead, "params");
  let size = tx.bytes.length;
  if (simulate) size += ANTE_GAS.simulatedSignerBytes * tx.signers.length;
  ctx.gas.consume(ANTE_GAS.txSizeCostPerByte * size, "txSize");

  deductFee(ctx, tx, deps);
  setPubKeys(ctx, tx, deps);
  if (tx.signers.length > ANTE_GAS.txSigLimit) {
    throw sdkErrors.tooManySignatures.wrap(`signatures: ${tx.signers.length}, limit: ${ANTE_GAS.txSigLimit}`);
  }
  ctx.gas.consume(ANTE_GAS.paramsRead, "params");
  for (const signer of tx.signers) {
    deps.auth.getAccount(ctx, signer);
    ctx.gas.consume(ANTE_GAS.sigVerifyCostSecp256k1, "ante verify: secp256k1");
  }
  verifySignatures(ctx, tx, deps);
  for (const signer of tx.signers) {
    const acc = deps.auth.getAccount(ctx, signer);
    if (acc) deps.auth.setAccount(ctx, { ...acc, sequence: acc.sequence + 1n });
  }
}

function deductFee(ctx: ExecContext, tx: DecodedTx, deps: AnteDeps): void {
  const fee = tx.authInfo.fee ?? { amount: [], gasLimit: 0n, payer: "", granter: "" };
  if (ctx.mode !== "simulate" && fee.gasLimit === 0n) {
    throw sdkErrors.invalidGasLimit.wrap("must provide positive gas");
  }
  if (ctx.mode === "check") {
    const need = requiredFee(deps.minGasPrice, fee.gasLimit);
    const paid = fee.amount.find((c) => c.denom === deps.minGasPrice.denom);
    if (need > 0n && (paid === undefined || BigInt(paid.amount) < need)) {
      throw sdkErrors.insufficientFee.wrap(
        `insufficient fees; got: ${coinsToString(fee.amount)} required: ${need}${deps.minGasPrice.denom}`,
      );
    }
  }
  if (fee.granter !== "") throw sdkErrors.invalidRequest.wrap("fee grants are not supported on the devnet");
  const payer = fee.payer !== "" ? fee.payer : (tx.signers[0] as string);
  if (!deps.auth.getAccount(ctx, payer)) {
    throw sdkErrors.unknownAddress.wrap(`fee payer address: ${payer} does not exist`);
  }
  // Simulate carries no fee, yet delivery will pay one: charge the same transfer (on the
  // throwaway simulation state) so the estimate covers what delivery uses.
  const charged =
    fee.amount.length === 0 &&
    ctx.mode === "simulate" &&
    deps.bank.getBalance(ctx, payer, deps.minGasPrice.denom) > 0n
      ? [{ denom: deps.minGasPrice.denom, amount: "1" }]
      : fee.amount;
  if (charged.length > 0) {
    try {
      deps.bank.sendCoins(ctx, payer, deps.feeCollector, charged);
    } catch (err) {
      if (sdkErrors.insufficientFunds.is(err))
        throw sdkErrors.insufficientFunds.wrap((err as ChainError).log);
      throw err;
    }
  }
  ctx.emit({
    type: "tx",
    attributes: [
      { key: "fee", value: coinsToString(fee.amount) },
      { key: "fee_payer", value: payer },
    ],
  });
}

function setPubKeys(ctx: ExecContext, tx: DecodedTx, deps: AnteDeps): void {
  tx.signers.forEach((signer, i) => {
    const info = tx.authInfo.signerInfos[i];
    const acc = deps.auth.getAccount(ctx, signer);
    if (!acc) throw sdkErrors.unknownAddress.wrap(`account ${signer} does not exist`);
    if (info?.publicKey) {
      if (info.publicKey.typeUrl !== SECP256K1_PUBKEY_URL) {
        throw sdkErrors.invalidPubKey.wrap(`unsupported public key type ${info.publicKey.typeUrl}`);
      }
      let key: Uint8Array;
      try {
        key = PubKey.decode(info.publicKey.value).key;
      } catch {
        throw sdkErrors.invalidPubKey.wrap("malformed secp256k1 public key");
      }
      if (key.length !== 33 || addressOfPubkey(key, deps.bech32Prefix) !== signer) {
        throw sdkErrors.invalidPubKey.wrap(
          `pubKey does not match signer address ${signer} with signer index: ${i}`,
        );
      }
      if (!acc.pubKey) deps.auth.setAccount(ctx, { ...acc, pubKey: key });
    }
  });
  tx.signers.forEach((signer, i) => {
    const seq = tx.authInfo.signerInfos[i]?.sequence ?? 0n;
    ctx.emit({ type: "tx", attributes: [{ key: "acc_seq", value: `${signer}/${seq}` }] });
    const sig = tx.raw.signatures[i] ?? new Uint8Array();
    ctx.emit({ type: "tx", attributes: [{ key: "signature", value: Buffer.from(sig).toString("base64") }] });
  });
}

function verifySignatures(ctx: ExecContext, tx: DecodedTx, deps: AnteDeps): void {
  tx.signers.forEach((signer, i) => {
    const acc = deps.auth.getAccount(ctx, signer);
    if (!acc) throw sdkErrors.unknownAddress.wrap(`account ${signer} does not exist`);
    const info = tx.authInfo.signerInfos[i];
    const seq = info?.sequence ?? 0n;
    if (seq !== acc.sequence) {
      throw sdkErrors.wrongSequence.wrap(`account sequence mismatch, expected ${acc.sequence}, got ${seq}`);
    }
    if (ctx.mode === "simulate") return;
    if (!acc.pubKey) throw sdkErrors.invalidPubKey.wrap("pubkey on account is not set");
    const mode = info?.modeInfo?.single?.mode;
    const failed = (reason: string) =>
      sdkErrors.unauthorized.wrap(
        `signature verification failed; please verify account number (${acc.accountNumber}) and chain-id (${deps.chainId}): (${reason})`,
      );
    let doc: Uint8Array;
    if (mode === SIGN_MODE_DIRECT) {
      doc = signBytes(tx.raw.bodyBytes, tx.raw.authInfoBytes, deps.chainId, acc.accountNumber);
    } else if (mode === SIGN_MODE_LEGACY_AMINO_JSON) {
      try {
        doc = deps.aminoSignBytes(tx, acc.accountNumber, seq);
      } catch (err) {
        throw failed(`no amino JSON sign doc: ${err instanceof Error ? err.message : String(err)}`);
      }
    } else {
      throw failed(
        `unsupported sign mode ${mode ?? "unset"}; the devnet accepts SIGN_MODE_DIRECT and SIGN_MODE_LEGACY_AMINO_JSON`,
      );
    }
    const reason = verifySecp256k1(acc.pubKey, doc, tx.raw.signatures[i] ?? new Uint8Array());
    if (reason !== undefined) throw failed(reason);
  });
}
