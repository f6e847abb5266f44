/** Public surface of the chain client: the port, the cosmjs adapter, the event feed, the keyring. */

export { type CosmosChain, type CosmosChainOptions, DEFAULT_GAS, openCosmosChain } from "./cosmos/adapter.ts";
export { blockEventsFetcher } from "./cosmos/block-events.ts";
export { connectNode, websocketUrlFor } from "./cosmos/rpc.ts";
export { signerFromKey, type TxSigner } from "./cosmos/signer.ts";
export { deriveSubSigners, SubSignerFunder } from "./cosmos/sub-signers.ts";
export { TxMetrics, type TxResult } from "./cosmos/tx-pipeline.ts";
export { FanOut, type FeedConsumer } from "./events/fanout.ts";
export { EventFeed, type EventFeedOptions, type FeedMetrics, type FeedState } from "./events/feed.ts";
export type { FeedItem, LeaseEvent, LeaseEventKind } from "./events/types.ts";
export * from "./keyring/index.ts";
export { registerChainMetrics } from "./metrics.ts";
export * from "./port.ts";
export { AckBatcher, type AckBatcherOptions, type AckRequest } from "./tx/ack-batcher.ts";
export { feeFor, type GasConfig, planGas } from "./tx/fees.ts";
