import type { Registry } from "prom-client";
import type { ChainPort } from "../../chain/port.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { BackendClient, BackendStats } from "../backend-client/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import type { MaintenanceJournal } from "../maintenance/journal.ts";
import type { SweepSummary } from "../reconciler/index.ts";
import type { BackendFleet, Placements } from "../store/index.ts";

/**
 * What the dashboard reads, all of it state providerd already holds: the configuration,
 * the placement store's rooms, the backend clients (breakers), the event feed's figures,
 * the reconciler's latest sweep, the prom-client registry (billing's counters) and the
 * chain (memoized, chain-view.ts). Read only: nothing here is called to change anything.
 */
export interface DashboardSources {
  config: ProviderConfig;
  clock: Clock;
  logger: Logger;
  chain: Pick<ChainPort, "getLease" | "leasePagesByProvider" | "providerWithdrawable">;
  store: Pick<Placements, "placement" | "attemptFor" | "counts" | "eachPlacement" | "unresolvedAttempts">;
  fleet: Pick<BackendFleet, "backends">;
  /** Breaker states, and a lease's own reads on its owner (the lease page, memoized). */
  clients: ReadonlyMap<string, Pick<BackendClient, "circuitState" | "provisionInfo" | "releases" | "usage">>;
  /** A lease's newest maintenance command (restart/update), for its events. */
  maintenance: Pick<MaintenanceJournal, "newest" | "byMaintenanceId">;
  feed: () => { lastHeight: number; lastBlockAtMs: number };
  /** By backend: did it answer the latest sweep (fenced: false)? */
  backendHealthy: () => ReadonlyMap<string, boolean>;
  lastSweep: () => SweepSummary | undefined;
  registry: Registry;
  /** Leases waiting for their tenant's payload. */
  awaitingPayload: () => number;
}

/** One backend's latest `/stats` reading from the routing poll (undefined: it failed). */
export interface StatsReading {
  stats: BackendStats | undefined;
  atMs: number;
}

export interface OwnerReads {
  diagnostics: Record<string, unknown> | null;
  releases: Record<string, unknown>[];
  usage: Record<string, unknown> | null;
  /** Whether the owner answered every read ("ok"), or which did not. */
  read: "ok" | "failed" | "no_owner";
}
