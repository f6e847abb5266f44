import { Gauge, type Registry } from "prom-client";
import type { ChainPort } from "../../chain/port.ts";
import { withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { fredVersion } from "../../version.ts";
import type { BackendClient } from "../backend-client/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import type { Leadership, Role } from "../ha/leadership.ts";
import type { InventoryReadiness } from "../reconciler/index.ts";
import type { BackendFleet, PayloadRecords, Placements, ReplayStore } from "../store/index.ts";

/**
 * The body `/health` and `/readyz` share. Remote probes (chain, backends) run together
 * under one short budget; local stores are checked synchronously. healthy: everything
 * passed; degraded: a remote dependency is impaired (still ready); unhealthy: a local
 * store or the placement inventory is not usable (not ready). `/health` never uses the
 * verdict for its status code; `/readyz` also waits for the event feed and recovery.
 * Every report sets `fred_health_check_healthy{check}`, the gauge operators alert on.
 */
export interface HealthSources {
  config: ProviderConfig;
  clock: Clock;
  chain: ChainPort;
  clients: ReadonlyMap<string, BackendClient>;
  store: Placements;
  /** The pinned backends (storage identities, lost backends, baselines). */
  fleet: BackendFleet;
  payloads: PayloadRecords | undefined;
  tokens: ReplayStore | undefined;
  inFlight: () => number;
  /** This instance's role among the provider's instances. */
  leadership: Leadership;
  feedLive: () => boolean;
  recoveryDone: () => boolean;
  /** What the reconciler's sweeps say about the placement inventory (see InventoryReadiness). */
  inventory?: () => InventoryReadiness;
  /** fred_health_check_healthy, set from every report (createHealthGauge). */
  gauge?: Gauge<"check">;
}

export function createHealthGauge(registry: Registry): Gauge<"check"> {
  return new Gauge({
    name: "fred_health_check_healthy",
    help: "1 when the dependency check passed in the latest /health or /readyz report, else 0",
    labelNames: ["check"],
    registers: [registry],
  });
}

type Check = { status: "healthy" | "unhealthy"; message?: string };

export interface HealthReport {
  status: "healthy" | "degraded" | "unhealthy";
  provider_uuid: string;
  /** "leader" carries out the provider's work; a "standby" serves reads and waits to take over. */
  role: Role;
  /** This process's id (new at every start). */
  instance: string;
  /** The instance that leads, as this one last saw it; null when none is known to. */
  leader: string | null;
  /** The package version, and the git commit when running from a checkout (null otherwise). */
  version: string;
  commit: string | null;
  checks: Record<string, Check>;
  stats: { in_flight_provisions: number };
}

const REMOTE_BUDGET_MS = 3_000;

/** A probe past the budget fails like any other (the report keeps only `failure`). */
const probeTimedOut = () =>
  new FredError("ERR_HEALTH_PROBE_TIMEOUT", `health probe: no answer within ${REMOTE_BUDGET_MS} ms`);

async function probe(
  clock: Clock,
  fn: (signal: AbortSignal) => Promise<unknown>,
  failure: string,
): Promise<Check> {
  try {
    await withDeadline(clock, REMOTE_BUDGET_MS, undefined, probeTimedOut, fn);
    return { status: "healthy" };
  } catch {
    return { status: "unhealthy", message: failure };
  }
}

function local(fn: () => unknown, failure: string): Check {
  try {
    fn();
    return { status: "healthy" };
  } catch {
    return { status: "unhealthy", message: failure };
  }
}

export async function healthReport(s: HealthSources): Promise<HealthReport> {
  const checks: Record<string, Check> = {};
  const remote: Promise<void>[] = [
    probe(s.clock, (signal) => s.chain.latestBlock(signal), "chain query failed").then((c) => {
      checks.chain = c;
    }),
  ];
  for (const b of s.config.backends) {
    const key = `backend:${b.name}`;
    const client = s.clients.get(b.name);
    if (b.fenced || client === undefined) {
      checks[key] = { status: "unhealthy", message: "backend is fenced" };
      continue;
    }
    remote.push(
      probe(s.clock, (signal) => client.stats(signal), "backend health check failed").then((c) => {
        checks[key] = c;
      }),
    );
  }
  // A store on PostgreSQL is a remote read too: the same budget bounds it.
  const storeRead = (key: string, read: () => Promise<unknown>, failure: string): void => {
    remote.push(
      probe(s.clock, read, failure).then((c) => {
        checks[key] = c;
      }),
    );
  };
  const { tokens, payloads } = s;
  if (tokens !== undefined) storeRead("token_tracker", () => tokens.size(), "token tracker is unreadable");
  if (payloads !== undefined) {
    storeRead(
      "payload_store",
      () => payloads.has("00000000-0000-4000-8000-000000000000"),
      "payload store is unreadable",
    );
  }
  checks.placement_store =
    s.store.failure === undefined
      ? local(() => s.store.counts(), "placement store is unreadable")
      : {
          status: "unhealthy",
          message: "placement store refuses writes since a commit failed; restart providerd",
        };
  const names = s.config.backends.map((b) => b.name);
  let inventoryOk = false;
  try {
    inventoryOk = s.fleet.baselineMatches(names);
  } catch {
    inventoryOk = false;
  }
  checks.placement_inventory = inventoryCheck(inventoryOk, s.inventory?.());
  await Promise.all(remote);
  const localBad = ["placement_store", "placement_inventory", "payload_store", "token_tracker"].some(
    (k) => checks[k]?.status === "unhealthy",
  );
  const remoteBad = Object.entries(checks).some(
    ([k, c]) => (k === "chain" || k.startsWith("backend:")) && c.status === "unhealthy",
  );
  for (const [check, c] of Object.entries(checks)) s.gauge?.set({ check }, c.status === "healthy" ? 1 : 0);
  const leading = s.leadership.current();
  return {
    status: localBad ? "unhealthy" : remoteBad ? "degraded" : "healthy",
    provider_uuid: s.config.providerUuid,
    role: leading.role,
    instance: s.leadership.instance,
    leader: leading.leader ?? null,
    version: fredVersion().version,
    commit: fredVersion().commit ?? null,
    // Code-unit order: localeCompare would load ICU's collation tables (2–3 MB of the
    // binary resident) for names that are ASCII anyway.
    checks: Object.fromEntries(Object.entries(checks).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    stats: { in_flight_provisions: s.inFlight() },
  };
}

function inventoryCheck(baseline: boolean, r: InventoryReadiness | undefined): Check {
  if (!baseline)
    return { status: "unhealthy", message: "no inventory baseline matches the configured backends" };
  if (r !== undefined && r.awaiting.length > 0)
    return {
      status: "unhealthy",
      message: `an interrupted sweep awaits the inventories of ${r.awaiting.join(", ")}`,
    };
  if (r?.fencedMayHold)
    return { status: "unhealthy", message: "a fenced backend may hold a lease with no placement row" };
  return { status: "healthy" };
}

/** Readiness: not unhealthy, the event feed subscribed, and the startup recovery pass done. */
export function isReady(report: HealthReport, s: HealthSources): boolean {
  return report.status !== "unhealthy" && s.feedLive() && s.recoveryDone();
}
