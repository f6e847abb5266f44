import type { ChainPort } from "../../../src/chain/port.ts";
import { AckBatcher } from "../../../src/chain/tx/ack-batcher.ts";
import { KeyedMutex } from "../../../src/core/async/index.ts";
import type { ManualClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import type { BackendClient } from "../../../src/provider/backend-client/index.ts";
import type { ProviderConfig } from "../../../src/provider/config/index.ts";
import { type LifecycleDeps, silentObserver } from "../../../src/provider/lifecycle/index.ts";
import { Router } from "../../../src/provider/router.ts";
import type { PlacementStore } from "../../../src/provider/store/index.ts";

/**
 * The lifecycle's dependencies for a test: real store, router, queue and ack batcher
 * (one lease per chain tx, so each acknowledgement is observable at once), silent logs.
 */
export function lifecycleDeps(o: {
  config: ProviderConfig;
  chain: ChainPort;
  store: PlacementStore;
  clock: ManualClock;
  clients?: Map<string, BackendClient>;
}): LifecycleDeps {
  const logger = createLogger("test", "silent");
  return {
    config: o.config,
    chain: o.chain,
    store: o.store.placements,
    fleet: o.store.fleet,
    payloads: undefined,
    clients: o.clients ?? new Map(),
    router: new Router({ backends: o.config.backends, clock: o.clock }),
    acks: new AckBatcher({ chain: o.chain, clock: o.clock, logger, maxBatch: 1 }),
    queue: new KeyedMutex(),
    clock: o.clock,
    logger,
    observe: silentObserver,
  };
}

export { RecordingChain, recordingChain, type SentTx } from "../../chain/recording-chain.ts";
