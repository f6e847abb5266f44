import { privateKeyFromHex } from "../../auth/keys.ts";
import { openCosmosChain } from "../../chain/cosmos/adapter.ts";
import { signerFromKey } from "../../chain/cosmos/signer.ts";
import { MsgUpdateProvider } from "../../chain/proto/index.ts";

/**
 * Points the devnet's provider record at the local providerd, so tenant tools that look
 * the provider up on chain (`fred lease` without --provider-url) find it. Sent by the
 * provider dev account, which the devnet's genesis puts on the SKU module's allowed
 * list; only when the stored api_url differs (a second start on the same port sends
 * nothing). Returns what happened, for the summary; a refusal (a devnet home made before
 * the allowed list) is reported, not fatal: --provider-url still works.
 */
export type ApiUrlOutcome = "registered" | "unchanged" | { refused: string };

export async function registerProviderApiUrl(o: {
  rpc: string;
  providerUuid: string;
  privateKeyHex: string;
  apiUrl: string;
}): Promise<ApiUrlOutcome> {
  const signer = signerFromKey(privateKeyFromHex(o.privateKeyHex));
  const chain = await openCosmosChain({ rpcUrl: o.rpc, signer, txTimeoutMs: 30_000 });
  try {
    const record = await chain.providerRecord(o.providerUuid);
    if (record === undefined) return { refused: `the chain has no provider ${o.providerUuid}` };
    if (record.apiUrl === o.apiUrl) return "unchanged";
    const msg = MsgUpdateProvider.fromPartial({
      authority: chain.address,
      uuid: record.uuid,
      address: record.address,
      payoutAddress: record.payoutAddress,
      metaHash: record.metaHash,
      active: record.active,
      apiUrl: o.apiUrl,
    });
    try {
      await chain.send([{ typeUrl: MsgUpdateProvider.typeUrl, value: msg }]);
    } catch (err) {
      return { refused: (err as Error).message };
    }
    return "registered";
  } finally {
    chain.disconnect();
  }
}
