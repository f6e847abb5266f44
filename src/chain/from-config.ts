/**
 * Wiring for providerd's composition root: the signing key from the keyring, the cosmjs
 * chain client and the event feed, all from validated config. Secrets are passed in (the
 * composition root reads FRED_KEYRING_PASSPHRASE), never read here.
 */
import { type Clock, systemClock } from "../core/clock.ts";
import { FredError } from "../core/errors.ts";
import type { Logger } from "../log.ts";
import { type CosmosChain, openCosmosChain } from "./cosmos/adapter.ts";
import { blockEventsFetcher } from "./cosmos/block-events.ts";
import { signerFromKey } from "./cosmos/signer.ts";
import { deriveSubSigners, SubSignerFunder } from "./cosmos/sub-signers.ts";
import type { TxMetrics } from "./cosmos/tx-pipeline.ts";
import { EventFeed } from "./events/feed.ts";
import { Keyring } from "./keyring/keyring.ts";

/** The config fields the chain client reads (a subset of providerd's ProviderConfig). */
export interface ChainClientConfig {
  providerUuid: string;
  providerAddress: string;
  keyringDir: string;
  keyName: string;
  keyringBackend: string;
  bech32Prefix: string;
  chainId: string;
  rpcUrl: string;
  websocketUrl: string;
  websocketPingIntervalMs: number;
  websocketReconnectInitialMs: number;
  websocketReconnectMaxMs: number;
  txPollIntervalMs: number;
  txTimeoutMs: number;
  queryPageLimit: number;
  maxWithdrawIterations: number;
  withdrawLimit: number;
  gasLimit: number;
  gasAdjustment: number;
  maxGasLimit: number;
  gasPrice: number;
  feeDenom: string;
  subSignerCount?: number;
  subSignerMinBalance?: string;
  subSignerTopUpAmount?: string;
  subSignerFundCheckIntervalMs?: number;
}

export interface ProviderChain {
  chain: CosmosChain;
  feed: EventFeed;
  /** Number of authz sub-signer lanes (0 = the provider key sends everything). */
  lanes: number;
  /** Closes the feed and the node connection. */
  close(): Promise<void>;
}

export async function openProviderChain(
  cfg: ChainClientConfig,
  secrets: { keyringPassphrase?: string | undefined; mnemonic?: string | undefined },
  deps: {
    clock?: Clock;
    logger?: Logger;
    metrics?: TxMetrics;
    expectedBlockTimeMs?: number;
    heartbeatMultiple?: number;
  } = {},
): Promise<ProviderChain> {
  const keyring = new Keyring({
    dir: cfg.keyringDir,
    backend: cfg.keyringBackend,
    passphrase: secrets.keyringPassphrase,
    prefix: cfg.bech32Prefix,
  });
  const key = await keyring.unlock(cfg.keyName);
  if (key.address !== cfg.providerAddress)
    deps.logger?.warn(
      { key_address: key.address, provider_address: cfg.providerAddress },
      "the signing key is not the provider address; the chain accepts lease transactions only from the provider (or via authz)",
    );
  const chain = await openCosmosChain({
    rpcUrl: cfg.rpcUrl,
    chainId: cfg.chainId,
    signer: signerFromKey(key.privateKey, cfg.bech32Prefix),
    gas: {
      gasLimit: cfg.gasLimit,
      gasAdjustment: cfg.gasAdjustment,
      maxGasLimit: cfg.maxGasLimit,
      gasPrice: cfg.gasPrice,
      feeDenom: cfg.feeDenom,
    },
    txTimeoutMs: cfg.txTimeoutMs,
    txPollIntervalMs: cfg.txPollIntervalMs,
    queryPageLimit: cfg.queryPageLimit,
    withdrawLimit: cfg.withdrawLimit,
    maxWithdrawIterations: cfg.maxWithdrawIterations,
    ...(deps.clock === undefined ? {} : { clock: deps.clock }),
    ...(deps.logger === undefined ? {} : { logger: deps.logger }),
    ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
  });
  const feed = new EventFeed({
    url: cfg.websocketUrl,
    providerUuid: cfg.providerUuid,
    pingIntervalMs: cfg.websocketPingIntervalMs,
    reconnectInitialMs: cfg.websocketReconnectInitialMs,
    reconnectMaxMs: cfg.websocketReconnectMaxMs,
    fetchBlockEvents: blockEventsFetcher(chain.conn),
    ...(deps.clock === undefined ? {} : { clock: deps.clock }),
    ...(deps.logger === undefined ? {} : { logger: deps.logger }),
    ...(deps.expectedBlockTimeMs === undefined ? {} : { expectedBlockTimeMs: deps.expectedBlockTimeMs }),
    ...(deps.heartbeatMultiple === undefined ? {} : { heartbeatMultiple: deps.heartbeatMultiple }),
  });
  const count = cfg.subSignerCount ?? 0;
  let funder: SubSignerFunder | undefined;
  if (count > 0) {
    if (secrets.mnemonic === undefined || secrets.mnemonic === "") {
      chain.disconnect();
      throw new FredError("ERR_CONFIG", "sub_signer_count > 0 needs FRED_MNEMONIC to derive the sub-signers");
    }
    try {
      await chain.enableSubSigners(deriveSubSigners(secrets.mnemonic, count, cfg.bech32Prefix), {
        minBalance: cfg.subSignerMinBalance ?? "10000000umfx",
        topUpAmount: cfg.subSignerTopUpAmount ?? "50000000umfx",
      });
    } catch (err) {
      chain.disconnect();
      throw err;
    }
    funder = new SubSignerFunder(
      deps.clock ?? systemClock,
      cfg.subSignerFundCheckIntervalMs ?? 3_600_000,
      async () => {
        await chain.topUpSubSigners();
      },
      deps.logger,
    );
    funder.start();
  }
  return {
    chain,
    feed,
    lanes: count,
    async close() {
      funder?.stop();
      await feed.stop();
      chain.disconnect();
    },
  };
}
