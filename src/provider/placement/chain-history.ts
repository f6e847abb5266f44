import { openCosmosChain } from "../../chain/cosmos/adapter.ts";
import type { ChainPort } from "../../chain/port.ts";
import { FredError, isFredError } from "../../core/errors.ts";

/**
 * The one chain question `fred placement init` asks: has this provider EVER had a lease
 * (any state)? A provider with history must restore its placement store, never create
 * a fresh one. It is the Chain port's `hasLeaseHistory`; tests pass a stub.
 */
export type ChainHistory = Pick<ChainPort, "hasLeaseHistory">;

/** Asks the node at `rpcUrl` through the chain client (one short-lived connection per question). */
export class CometRpcChainHistory implements ChainHistory {
  constructor(private readonly rpcUrl: string) {}

  async hasLeaseHistory(providerUuid: string, signal?: AbortSignal): Promise<boolean> {
    try {
      const chain = await openCosmosChain({ rpcUrl: this.rpcUrl });
      try {
        return await chain.hasLeaseHistory(providerUuid, signal);
      } finally {
        chain.disconnect();
      }
    } catch (err) {
      if (!isFredError(err, "ERR_CHAIN_UNAVAILABLE") && !isFredError(err, "ERR_CHAIN_RPC_TIMEOUT")) throw err;
      const cause = (err.cause as Error | undefined)?.message ?? err.message;
      throw new FredError("ERR_CHAIN_UNAVAILABLE", `chain RPC ${this.rpcUrl} did not answer: ${cause}`, {
        retryable: true,
        cause: err,
      });
    }
  }
}
