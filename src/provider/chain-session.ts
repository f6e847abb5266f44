import { type CosmosChain, openCosmosChain } from "../chain/cosmos/adapter.ts";
import { signerFromKey } from "../chain/cosmos/signer.ts";
import type { TxMetrics } from "../chain/cosmos/tx-pipeline.ts";
import { EventFeed } from "../chain/events/feed.ts";
import { Keyring } from "../chain/keyring/index.ts";
import type { Clock } from "../core/clock.ts";
import { FredError } from "../core/errors.ts";
import type { Logger } from "../log.ts";
import type { ProviderConfig } from "./config/index.ts";

/**
 * providerd's chain session: the provider key unlocked from the keyring (it must be
 * provider_address), a client signing with it, and proof that the node serves chain_id.
 * A client whose node serves another chain is disconnected before the refusal.
 */
export async function openChainSession(
  config: ProviderConfig,
  env: Record<string, string | undefined>,
  clock: Clock,
  logger: Logger,
  metrics: TxMetrics,
): Promise<CosmosChain> {
  const privateKey = await unlockProviderKey(config, env.FRED_KEYRING_PASSPHRASE);
  const chain = await openCosmosChain({
    rpcUrl: config.rpcUrl,
    chainId: config.chainId,
    signer: signerFromKey(privateKey, config.bech32Prefix),
    gas: {
      gasLimit: config.gasLimit,
      gasAdjustment: config.gasAdjustment,
      maxGasLimit: config.maxGasLimit,
      gasPrice: config.gasPrice,
      feeDenom: config.feeDenom,
    },
    txTimeoutMs: config.txTimeoutMs,
    txPollIntervalMs: config.txPollIntervalMs,
    queryPageLimit: config.queryPageLimit,
    withdrawLimit: config.withdrawLimit,
    maxWithdrawIterations: config.maxWithdrawIterations,
    clock,
    logger,
    metrics,
  });
  try {
    const network = await chain.network();
    if (network !== config.chainId) {
      throw new FredError(
        "ERR_CHAIN_ID_MISMATCH",
        `chain_id is ${config.chainId}, but the node at ${config.rpcUrl} serves ${network}`,
      );
    }
  } catch (err) {
    await chain.disconnect();
    throw err;
  }
  return chain;
}

async function unlockProviderKey(
  config: ProviderConfig,
  passphrase: string | undefined,
): Promise<Uint8Array> {
  const keyring = new Keyring({
    dir: config.keyringDir,
    backend: config.keyringBackend,
    passphrase,
    prefix: config.bech32Prefix,
  });
  const key = await keyring.unlock(config.keyName);
  if (key.address !== config.providerAddress) {
    throw new FredError(
      "ERR_PROVIDER_KEY_MISMATCH",
      `key ${config.keyName} is ${key.address}, but provider_address is ${config.providerAddress}`,
    );
  }
  return key.privateKey;
}

/** The chain's event feed as providerd follows it (custom-domain changes included). */
export function providerEventFeed(
  config: ProviderConfig,
  chain: CosmosChain,
  clock: Clock,
  logger: Logger,
): EventFeed {
  return new EventFeed({
    url: config.websocketUrl,
    providerUuid: config.providerUuid,
    clock,
    pingIntervalMs: config.websocketPingIntervalMs,
    reconnectInitialMs: config.websocketReconnectInitialMs,
    reconnectMaxMs: config.websocketReconnectMaxMs,
    stallTimeoutMs: config.eventStallTimeoutMs,
    fetchBlockEvents: (height, signal) => chain.blockEvents(height, signal),
    // Custom-domain changes reach the owner backend in seconds, not at the next sweep.
    customDomains: true,
    logger,
  });
}
