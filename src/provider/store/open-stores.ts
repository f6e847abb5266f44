import type { ReleaseStack } from "../../core/async/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import type { PayloadRecords } from "./payload-records.ts";
import { PayloadStore } from "./payload-store.ts";
import { PlacementStore } from "./placement-store.ts";
import type { ReplayStore } from "./replay-store.ts";
import type { SnapshotSources } from "./snapshot.ts";
import { TokenTracker } from "./token-tracker.ts";

/** providerd's databases, opened from the config; each is released by `releases`. */
export interface ProviderStores {
  placement: PlacementStore;
  payloads: PayloadRecords | undefined;
  tokens: ReplayStore | undefined;
  /** The files `placement_snapshot_dir` copies (SQLite only; PostgreSQL has its own backups). */
  snapshots: SnapshotSources | undefined;
}

/** How providerd gets its stores: the SQLite files below, or PostgreSQL (ha/replicated.ts). */
export type OpenStores = (releases: ReleaseStack) => Promise<ProviderStores>;

/** The SQLite files the config names. */
export function sqliteStores(
  config: Pick<
    ProviderConfig,
    "placementStoreDbPath" | "providerUuid" | "payloadStoreDbPath" | "tokenTrackerDbPath"
  >,
): OpenStores {
  return async (releases) => {
    const placement = releases.use(
      "placement store",
      PlacementStore.open(config.placementStoreDbPath, config.providerUuid),
    );
    const payloadsPath = config.payloadStoreDbPath;
    const tokensPath = config.tokenTrackerDbPath;
    const payloads =
      payloadsPath === undefined ? undefined : releases.use("payload store", PayloadStore.open(payloadsPath));
    return {
      placement,
      payloads,
      tokens:
        tokensPath === undefined ? undefined : releases.use("token tracker", TokenTracker.open(tokensPath)),
      snapshots: { placement, payload: payloads },
    };
  };
}
