/**
 * The sign bytes of a SIGN_MODE_LEGACY_AMINO_JSON signer for a decoded tx: its messages in
 * amino JSON (the chain's converters, shared with the client side in chain/proto), the fee
 * as a StdFee, memo, timeout height, chain id, account number and sequence, serialised as a
 * sorted, escaped StdSignDoc.
 */
import { aminoSignBytes, chainAminoTypes, chainRegistry } from "../../chain/amino-signing.ts";
import type { DecodedTx } from "./decode.ts";

export function aminoSignDoc(
  chainId: string,
): (tx: Pick<DecodedTx, "body" | "authInfo">, accountNumber: bigint, sequence: bigint) => Uint8Array {
  const registry = chainRegistry();
  const aminoTypes = chainAminoTypes(registry);
  return (tx, accountNumber, sequence) => {
    const fee = tx.authInfo.fee;
    return aminoSignBytes({
      aminoTypes,
      messages: tx.body.messages.map((any) => ({ typeUrl: any.typeUrl, value: registry.decode(any) })),
      fee: {
        amount: fee?.amount ?? [],
        gas: (fee?.gasLimit ?? 0n).toString(),
        ...(fee?.granter ? { granter: fee.granter } : {}),
        ...(fee?.payer ? { payer: fee.payer } : {}),
      },
      chainId,
      memo: tx.body.memo,
      accountNumber,
      sequence,
      timeoutHeight: tx.body.timeoutHeight,
    });
  };
}
