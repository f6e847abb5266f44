import type { ChainLease, ChainPort } from "../../chain/port.ts";
import { Coalescer } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { type CreditHorizon, coinText, depletesAtMs, horizonOf } from "./credit-math.ts";
import type { BillingMetrics } from "./metrics.ts";

/**
 * The credit monitor: for each tenant with ACTIVE leases here, the chain's credit
 * estimate (balance and the burn of all its ACTIVE leases, every provider's). A tenant
 * whose burnt balance is empty loses its leases here (closed on chain, `credit exhausted`)
 * only once the balance has stayed empty for the whole grace period; any non-zero read
 * clears it, and while deferring it is re-read every retry interval. A read error never
 * closes anything: after `errorThreshold` consecutive ones the tenant is re-read early.
 *
 * It also remembers each tenant's horizon for `GET status`, and warns the tenant's event
 * streams (opted-in clients) when a lease's credit horizon drops below 24 h and below 1 h
 * (once per threshold per lease), and when it closes the lease.
 */
export const CLOSE_REASON = "credit exhausted";
const HOUR_S = 3600n;
const WARN_THRESHOLDS = [
  { name: "24h", seconds: 24n * HOUR_S },
  { name: "1h", seconds: HOUR_S },
] as const;
/** The earliest re-check a depletion date may ask for (the reference keeps 10 s). */
const DEPLETION_LEAD_MS = 10_000;

export interface CreditNotices {
  creditLow(leaseUuid: string, depletesAtMs: number): void;
  closing(leaseUuid: string, reason: string): void;
}

export interface CreditMonitorDeps {
  chain: Pick<ChainPort, "leasesByProvider" | "leasesByTenant" | "creditEstimate" | "closeLeases">;
  providerUuid: string;
  clock: Clock;
  logger: Logger;
  metrics: BillingMetrics;
  intervalMs: number;
  retryIntervalMs: number;
  errorThreshold: number;
  gracePeriodMs: number;
  notices?: CreditNotices;
  /** A lease the monitor closed on chain: deprovision it through the lifecycle's close path. */
  leaseClosed?(leaseUuid: string, tenant: string): void;
}

/** What `GET status` shows of a tenant's credit. */
export interface CreditStatus {
  balance: string;
  burn_rate_per_hour: string;
  depletes_at: string | null;
}

interface TenantState {
  zeroSinceMs: number | undefined;
  errors: number;
  horizon: CreditHorizon | undefined;
  readAtMs: number;
  /** Thresholds already announced, by lease. */
  warned: Map<string, Set<string>>;
}

export class CreditMonitor {
  readonly #deps: CreditMonitorDeps;
  readonly #tenants = new Map<string, TenantState>();
  readonly #reads: Coalescer<CreditHorizon | undefined>;

  constructor(deps: CreditMonitorDeps) {
    this.#deps = deps;
    // A tenant the monitor has not checked yet (no ACTIVE lease here) is read for `GET status`;
    // reusing that read for a second keeps a polling tenant from reaching the chain node on
    // every request, as the lease read does.
    this.#reads = new Coalescer({ clock: deps.clock, ttlMs: 1_000 });
  }

  /** Whether the last check saw ACTIVE leases of this tenant here. */
  holds(tenant: string): boolean {
    return this.#tenants.has(tenant);
  }

  /** Every tenant with ACTIVE leases here; resolves the time it wants to run again. */
  async checkAll(signal: AbortSignal): Promise<number | undefined> {
    const byTenant = await this.#activeByTenant(signal);
    for (const tenant of [...this.#tenants.keys()]) if (!byTenant.has(tenant)) this.#tenants.delete(tenant);
    let due: number | undefined;
    for (const [tenant, leases] of byTenant) {
      if (signal.aborted) break;
      const want = await this.#check(tenant, leases, signal);
      if (want !== undefined && (due === undefined || want < due)) due = want;
    }
    return due;
  }

  /**
   * One tenant, from a fresh listing of that tenant's ACTIVE leases (the depletion watcher
   * asks, on every depletion event of any provider's lease): its own leases, not all of
   * this provider's, which at 100,000 leases made each event a full listing.
   */
  async checkTenant(tenant: string, signal: AbortSignal): Promise<number | undefined> {
    const mine = (l: ChainLease) =>
      l.providerUuid === this.#deps.providerUuid && l.state === "LEASE_STATE_ACTIVE";
    const leases = (await this.#deps.chain.leasesByTenant(tenant, "LEASE_STATE_ACTIVE", signal)).filter(mine);
    if (leases.length === 0) {
      this.#tenants.delete(tenant);
      return undefined;
    }
    return this.#check(tenant, leases, signal);
  }

  /** The tenant's credit for `GET status`: the monitor's last read while it is fresh, else a new one. */
  async status(tenant: string, signal?: AbortSignal): Promise<CreditStatus | undefined> {
    const st = this.#tenants.get(tenant);
    const now = this.#deps.clock.now();
    let horizon = st?.horizon;
    let readAt = st?.readAtMs ?? now;
    if (horizon === undefined || now - readAt > this.#deps.intervalMs) {
      horizon = await this.#reads.get(tenant, () => this.#read(tenant, signal));
      readAt = now;
    }
    if (horizon === undefined) return undefined;
    const at = depletesAtMs(horizon, readAt);
    return {
      balance: coinText(horizon.balance),
      burn_rate_per_hour: coinText(horizon.burnPerHour),
      depletes_at: at === undefined ? null : new Date(at).toISOString(),
    };
  }

  async #read(tenant: string, signal: AbortSignal | undefined): Promise<CreditHorizon | undefined> {
    const est = await this.#deps.chain.creditEstimate(tenant, signal);
    return est === undefined ? undefined : horizonOf(est);
  }

  async #activeByTenant(signal: AbortSignal): Promise<Map<string, ChainLease[]>> {
    const leases = await this.#deps.chain.leasesByProvider(
      this.#deps.providerUuid,
      "LEASE_STATE_ACTIVE",
      signal,
    );
    const out = new Map<string, ChainLease[]>();
    for (const l of leases) {
      if (l.state !== "LEASE_STATE_ACTIVE") continue;
      const list = out.get(l.tenant);
      if (list === undefined) out.set(l.tenant, [l]);
      else list.push(l);
    }
    return out;
  }

  #state(tenant: string): TenantState {
    let st = this.#tenants.get(tenant);
    if (st === undefined) {
      st = { zeroSinceMs: undefined, errors: 0, horizon: undefined, readAtMs: 0, warned: new Map() };
      this.#tenants.set(tenant, st);
    }
    return st;
  }

  async #check(tenant: string, leases: ChainLease[], signal: AbortSignal): Promise<number | undefined> {
    const d = this.#deps;
    const st = this.#state(tenant);
    const log = d.logger.child({ tenant });
    let horizon: CreditHorizon | undefined;
    try {
      horizon = await this.#read(tenant, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      return this.#readFailed(st, log, err);
    }
    if (horizon === undefined) return this.#readFailed(st, log, "no credit account");
    const now = d.clock.now();
    st.errors = 0;
    const live = new Set(leases.map((l) => l.uuid));
    for (const uuid of [...st.warned.keys()]) if (!live.has(uuid)) st.warned.delete(uuid);
    st.horizon = horizon;
    st.readAtMs = now;
    if (horizon.empty) {
      d.metrics.creditCheck("empty");
      st.zeroSinceMs ??= now;
      if (now - st.zeroSinceMs < d.gracePeriodMs) {
        d.metrics.deferral();
        log.info(
          { empty_for_ms: now - st.zeroSinceMs, grace_ms: d.gracePeriodMs },
          "tenant credit empty; closure deferred until the grace period has passed",
        );
        return now + d.retryIntervalMs;
      }
      await this.#close(tenant, st, leases, signal);
      return undefined;
    }
    d.metrics.creditCheck("ok");
    if (st.zeroSinceMs !== undefined) log.info("tenant credit is back; pending closure cleared");
    st.zeroSinceMs = undefined;
    this.#warn(st, leases, horizon, now);
    const at = depletesAtMs(horizon, now);
    if (at === undefined) return undefined;
    return Math.max(at - DEPLETION_LEAD_MS, now + Math.min(DEPLETION_LEAD_MS, d.intervalMs));
  }

  #readFailed(st: TenantState, log: Logger, err: unknown): number | undefined {
    st.errors++;
    this.#deps.metrics.creditCheck("error");
    log.warn(
      { err, consecutive_errors: st.errors },
      "tenant credit read failed; nothing is closed on an error",
    );
    return st.errors >= this.#deps.errorThreshold
      ? this.#deps.clock.now() + this.#deps.retryIntervalMs
      : undefined;
  }

  #warn(st: TenantState, leases: readonly ChainLease[], horizon: CreditHorizon, now: number): void {
    const at = depletesAtMs(horizon, now);
    const left = horizon.secondsLeft;
    if (at === undefined || left === undefined || this.#deps.notices === undefined) return;
    // The lowest threshold crossed: a lease already below 1 h at its first read gets one
    // frame, not two; the thresholds above it count as announced.
    const crossed = WARN_THRESHOLDS.filter((t) => left < t.seconds).at(-1);
    if (crossed === undefined) return;
    for (const lease of leases) {
      const sent = st.warned.get(lease.uuid) ?? new Set<string>();
      if (sent.has(crossed.name)) continue;
      for (const t of WARN_THRESHOLDS) if (t.seconds >= crossed.seconds) sent.add(t.name);
      st.warned.set(lease.uuid, sent);
      this.#deps.notices.creditLow(lease.uuid, at);
    }
  }

  async #close(tenant: string, st: TenantState, leases: ChainLease[], signal: AbortSignal): Promise<void> {
    const d = this.#deps;
    const uuids = leases.map((l) => l.uuid);
    d.logger.warn(
      { tenant, leases: uuids.length, grace_ms: d.gracePeriodMs },
      "tenant credit stayed empty for the grace period; closing its leases",
    );
    const outcomes = await d.chain.closeLeases(uuids, CLOSE_REASON, signal);
    let closed = 0;
    for (const o of outcomes) {
      if (o.status !== "closed" && o.status !== "already_done") {
        d.logger.warn(
          { err: o.error, lease_uuid: o.leaseUuid },
          "credit closure not confirmed; retried next check",
        );
        continue;
      }
      if (o.status === "closed") closed++;
      st.warned.delete(o.leaseUuid);
      d.notices?.closing(o.leaseUuid, CLOSE_REASON);
      d.leaseClosed?.(o.leaseUuid, tenant);
    }
    d.metrics.closures(closed);
    d.logger.info({ tenant, closed, outcomes: outcomes.map((o) => o.status) }, "credit closure sent");
    // A lease whose close did not go through is closed at the next check: the grace
    // period is over, and a non-zero read in between still clears it.
    if (outcomes.every((o) => o.status === "closed" || o.status === "already_done"))
      this.#tenants.delete(tenant);
  }
}
