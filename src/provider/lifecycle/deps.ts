import type { ChainPort } from "../../chain/port.ts";
import type { AckBatcher } from "../../chain/tx/ack-batcher.ts";
import type { KeyedMutex } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { BackendClient } from "../backend-client/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import type { Router } from "../router.ts";
import type { BackendFleet, PayloadRecords, Placements } from "../store/index.ts";

/** What the lifecycle workflows share; built once by the composition root. */
export interface LifecycleDeps {
  config: ProviderConfig;
  chain: ChainPort;
  store: Placements;
  /** The pinned backends (storage identities, lost backends, baselines). */
  fleet: BackendFleet;
  payloads: PayloadRecords | undefined;
  clients: ReadonlyMap<string, BackendClient>;
  router: Router;
  /** The one acknowledgement path to the chain. */
  acks: AckBatcher;
  /** The one serial queue per lease (keyed by lease UUID). */
  queue: KeyedMutex;
  clock: Clock;
  logger: Logger;
  observe: LifecycleObserver;
}

/** Hooks the metrics layer listens on (no-ops by default). */
export interface LifecycleObserver {
  provisionSent(backend: string, outcome: string): void;
  provisionSettled(backend: string, outcome: "success" | "failed", latencyMs: number): void;
  callback(outcome: string): void;
  /** A backend's lifecycle report that the chain and its own record contradict. */
  callbackContradicted(backend: string): void;
  /** A close to retry was dropped because the retry queue was full (the sweep has it). */
  closeRetryDropped(): void;
  /** A provision attempt passed provision_callback_timeout without its callback (once per attempt). */
  callbackTimeout(backend: string): void;
}

export const silentObserver: LifecycleObserver = {
  provisionSent: () => {},
  provisionSettled: () => {},
  callback: () => {},
  callbackContradicted: () => {},
  closeRetryDropped: () => {},
  callbackTimeout: () => {},
};
