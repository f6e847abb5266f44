import { TxBody, TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import { MsgAcknowledgeLease } from "../../../src/chain/proto/index.ts";
import type { Stack } from "./stack.ts";

/**
 * How many acknowledgement messages named each lease in the blocks after `fromHeight`, read
 * from the chain itself (each block's transactions, decoded), whether their transaction
 * succeeded or failed: a lease named twice is a duplicate acknowledgement sent by the
 * provider, even when the chain refused the second one.
 */
export async function acknowledgementsPerLease(
  stack: Stack,
  fromHeight: number,
): Promise<Map<string, number>> {
  const latest = await latestHeight(stack);
  const named = new Map<string, number>();
  for (let height = fromHeight + 1; height <= latest; height++) {
    const { block } = (await stack.devnet.call("block", { height: String(height) })) as {
      block: { data: { txs: string[] | null } };
    };
    for (const tx of block.data.txs ?? []) {
      const body = TxBody.decode(TxRaw.decode(Buffer.from(tx, "base64")).bodyBytes);
      for (const msg of body.messages) {
        if (msg.typeUrl !== MsgAcknowledgeLease.typeUrl) continue;
        for (const lease of MsgAcknowledgeLease.decode(msg.value).leaseUuids)
          named.set(lease, (named.get(lease) ?? 0) + 1);
      }
    }
  }
  return named;
}

export async function latestHeight(stack: Stack): Promise<number> {
  const status = (await stack.devnet.call("status")) as { sync_info: { latest_block_height: string } };
  return Number(status.sync_info.latest_block_height);
}
