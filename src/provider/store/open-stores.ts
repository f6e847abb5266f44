import type { ReleaseStack } from "../../core/async/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import { PayloadStore } from "./payload-store.ts";
import { PlacementStore } from "./placement-store.ts";
import { TokenTracker } from "./token-tracker.ts";

/** providerd's databases, opened from the config; each is released by `releases`. */
export interface ProviderStores {
  placement: PlacementStore;
  payloads: PayloadStore | undefined;
  tokens: TokenTracker | undefined;
}

export function openProviderStores(
  config: Pick<
    ProviderConfig,
    "placementStoreDbPath" | "providerUuid" | "payloadStoreDbPath" | "tokenTrackerDbPath"
  >,
  releases: ReleaseStack,
): ProviderStores {
  const placement = releases.use(
    "placement store",
    PlacementStore.open(config.placementStoreDbPath, config.providerUuid),
  );
  const payloadsPath = config.payloadStoreDbPath;
  const tokensPath = config.tokenTrackerDbPath;
  return {
    placement,
    payloads:
      payloadsPath === undefined ? undefined : releases.use("payload store", PayloadStore.open(payloadsPath)),
    tokens:
      tokensPath === undefined ? undefined : releases.use("token tracker", TokenTracker.open(tokensPath)),
  };
}
