import type { Clock } from "../core/clock.ts";
import type { Logger } from "../log.ts";
import type { RelayedAnswer, RelayedRequest } from "./ha/inbox.ts";
import type { Leadership } from "./ha/leadership.ts";
import type { HeapPolicy } from "./heap-policy.ts";
import type { BoundApiSocket } from "./http/bind.ts";
import type { Lifecycle } from "./lifecycle/index.ts";
import type { SweepReport } from "./reconciler/index.ts";
import type { OpenStores } from "./store/index.ts";

/** What starts providerd (`startProviderd` in main.ts) and what a started one offers. */
export interface ProviderdOptions {
  /**
   * Environment for secrets (FRED_KEYRING_PASSPHRASE, FRED_MNEMONIC for sub-signers) and
   * test crash points (FRED_FAILPOINTS).
   */
  env: Record<string, string | undefined>;
  clock?: Clock;
  logger?: Logger;
  /** How often backend `/stats` are read for routing (default 15 s). */
  statsIntervalMs?: number;
  /** The process's heap policy (the CLI starts it): reconciler sweeps run uncapped. */
  heap?: HeapPolicy | undefined;
}

export type ProviderdState = "starting" | "recovering" | "running" | "stopping" | "stopped";

export interface RunningProviderd {
  url: string;
  /** The operator dashboard's URL (undefined: operator_listen_addr is ""). */
  operatorUrl: string | undefined;
  readonly state: ProviderdState;
  readonly lifecycle: Lifecycle;
  /** Serves the TLS certificate files' current content (SIGHUP); false when refused or plain HTTP. */
  reloadTls(): boolean;
  /** A reconciler sweep now, or the one queued after the running sweep (SIGUSR1, tests). */
  reconcile(): Promise<SweepReport>;
  /** Serves a request another instance journaled (ha/inbox.ts) through this daemon's own routes. */
  serveRelayed(request: RelayedRequest): Promise<RelayedAnswer>;
  stop(): Promise<void>;
}

/**
 * How one providerd daemon runs: on its SQLite files as the sole leader, or, on
 * PostgreSQL, while this instance leads (ha/replicated.ts starts it at each takeover, on
 * the address the standby had bound).
 */
export interface DaemonParts {
  stores: OpenStores;
  leadership: Leadership;
  /** The API address already bound (an instance's shared one, ha/replicated.ts); default: bind api_listen_addr. */
  apiSocket?: BoundApiSocket;
}
