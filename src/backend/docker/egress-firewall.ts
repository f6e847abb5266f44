import { readFile } from "node:fs/promises";
import type Docker from "dockerode";
import { Counter, Gauge, type Registry } from "prom-client";
import { KeyedMutex } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { type EgressPolicy, egressRuleset, egressTableName, unreachableResolvers } from "./egress-rules.ts";
import { LABEL } from "./names.ts";
import { runNft } from "./nft.ts";

/**
 * Keeps this deployment's egress table (egress-rules.ts) in the kernel: the rules follow the
 * tenant networks the engine holds under our storage id, and a sweep puts them back when
 * they went missing (someone flushed or deleted the table, a host firewall reload) or the
 * networks changed behind our back. After a backend restart the first sweep is the startup
 * check. A dockerd restart does not touch the table: Docker rewrites only its own iptables
 * tables, and its networks keep their ids, so their bridge names stay the same.
 *
 * What is in the kernel is compared with what was last loaded by reading the table back
 * (`nft -s list`, counters left out), so any change to it is seen, not only its absence.
 */

export interface EgressFirewallOptions {
  docker: Docker;
  clock: Clock;
  log: Logger;
  storageId: string;
  policy: EgressPolicy;
  /** How often the sweep compares the kernel's table with ours. */
  sweepIntervalMs: number;
  /** true: rules that cannot be installed refuse the start; false: a WARN, and none are enforced. */
  productionMode: boolean;
  registry?: Registry;
  /** The nft binary (tests point it at a missing one). */
  nftBin?: string;
  /** The host's resolver list, checked against the policy at start (default /etc/resolv.conf). */
  resolvConfPath?: string;
}

/** starting → enforcing | unavailable (development only, rules could not be installed) → closed. */
export type EgressState = "starting" | "enforcing" | "unavailable" | "closed";

export type EgressOutcome = "unchanged" | "applied" | "repaired" | "skipped";

/** Docker's bridge interfaces: `br-<12 hex>` unless the network set its own name. */
const BRIDGE_NAME_OPTION = "com.docker.network.bridge.name";
const IFNAME = /^[A-Za-z0-9_.-]{1,15}$/;

export class EgressFirewall {
  readonly table: string;
  readonly #options: EgressFirewallOptions;
  readonly #log: Logger;
  readonly #serial = new KeyedMutex();
  #state: EgressState = "starting";
  /** The script last loaded and the kernel's listing of the table right after. */
  #loaded: { script: string; listing: string } | undefined;
  /** Why the last load failed, until one succeeds: tenants may run unfiltered meanwhile. */
  #failure: string | undefined;
  #stopSweep = () => {};
  readonly #metrics: { applied: Counter; repairs: Counter; failures: Counter; enforced: Gauge };

  constructor(options: EgressFirewallOptions) {
    this.#options = options;
    this.table = egressTableName(options.storageId);
    this.#log = options.log.child({ component: "egress", table: this.table });
    const registers = options.registry ? [options.registry] : [];
    this.#metrics = {
      applied: new Counter({
        name: "fred_egress_rulesets_applied_total",
        help: "egress rule sets loaded into the kernel (network changes and repairs)",
        registers,
      }),
      repairs: new Counter({
        name: "fred_egress_sweep_repairs_total",
        help: "times the kernel's egress table was missing or changed and was loaded again",
        registers,
      }),
      failures: new Counter({
        name: "fred_egress_apply_failures_total",
        help: "egress rule loads that failed",
        registers,
      }),
      enforced: new Gauge({
        name: "fred_egress_enforced",
        help: "1 while the egress policy is installed and swept, 0 when it could not be (development)",
        registers,
      }),
    };
  }

  get state(): EgressState {
    return this.#state;
  }

  /**
   * The backend's health answer for the policy: undefined while it is enforced (or not
   * required), else why not. A rule set that cannot be loaded after start (the table
   * flushed and nft failing, say) leaves new networks unfiltered: that is unhealthy.
   */
  problem(): string | undefined {
    if (this.#state !== "enforcing" || this.#failure === undefined) return undefined;
    return `egress firewall rules cannot be loaded: ${this.#failure}`;
  }

  /**
   * Loads the rules for the networks that exist now and starts the sweep. In production a
   * failure refuses the start; in development it is a WARN and tenants run unfiltered.
   */
  async start(signal: AbortSignal): Promise<void> {
    try {
      await this.#reconcile(signal);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      if (this.#options.productionMode) {
        throw new FredError(
          "ERR_EGRESS_FIREWALL",
          `egress policy: the tenant firewall rules cannot be installed (${why}); production_mode requires them. ` +
            "Install nftables (the nft command) and run the backend as root or with CAP_NET_ADMIN.",
          { retryable: false, cause: err },
        );
      }
      this.#state = "unavailable";
      this.#log.warn(
        { err: why },
        "egress policy NOT enforced: the firewall rules cannot be installed; tenant containers can reach the host and private networks (refused in production_mode)",
      );
      return;
    }
    this.#state = "enforcing";
    this.#metrics.enforced.set(1);
    this.#scheduleSweep();
    await this.#warnAboutResolvers();
  }

  /** A private host resolver the policy refuses breaks every tenant's name lookups: say so. */
  async #warnAboutResolvers(): Promise<void> {
    const path = this.#options.resolvConfPath ?? "/etc/resolv.conf";
    const text = await readFile(path, "utf8").catch(() => "");
    const resolvers = unreachableResolvers(text, this.#options.policy);
    if (resolvers.length === 0) return;
    this.#log.warn(
      { resolvers, resolv_conf: path },
      "the host's DNS resolvers are private addresses the egress policy refuses: tenant containers cannot resolve names until egress.allow lists them with port 53",
    );
  }

  /**
   * Brings the kernel's table in line with the tenant networks now, before a container joins
   * one (TenantNetworks calls it) and after one is removed. Throws when the rules cannot be
   * loaded; nothing is done unless the policy is being enforced.
   */
  async sync(signal: AbortSignal): Promise<EgressOutcome> {
    if (this.#state !== "enforcing") return "skipped";
    return this.#reconcile(signal);
  }

  /** One sweep pass (also what the timer runs). */
  sweep(signal: AbortSignal): Promise<EgressOutcome> {
    return this.sync(signal);
  }

  #reconcile(signal: AbortSignal): Promise<EgressOutcome> {
    return this.#serial.run("table", async () => {
      try {
        const outcome = await this.#load(signal);
        this.#failure = undefined;
        return outcome;
      } catch (err) {
        if (!signal.aborted) this.#failure = err instanceof Error ? err.message : String(err);
        throw err;
      }
    });
  }

  async #load(signal: AbortSignal): Promise<EgressOutcome> {
    const script = egressRuleset(this.table, await this.#bridges(signal), this.#options.policy);
    const listing = await this.#listing(signal);
    const loaded = this.#loaded;
    if (loaded !== undefined && loaded.script === script && loaded.listing === listing) return "unchanged";
    // Our own table differs from what we loaded (and the networks did not change it).
    const tampered = loaded !== undefined && loaded.listing !== listing;
    try {
      await runNft(["-f", "-"], script, this.#nft(signal));
    } catch (err) {
      this.#metrics.failures.inc();
      throw err;
    }
    this.#loaded = { script, listing: await this.#listing(signal) };
    this.#metrics.applied.inc();
    if (tampered) {
      this.#metrics.repairs.inc();
      this.#log.warn("egress table was missing or changed in the kernel; loaded again");
      return "repaired";
    }
    return "applied";
  }

  /** The bridge interfaces of our tenant networks, as the engine reports them. */
  async #bridges(signal: AbortSignal): Promise<string[]> {
    const networks = await this.#options.docker.listNetworks({
      filters: JSON.stringify({
        label: [`${LABEL.managed}=true`, `${LABEL.storageId}=${this.#options.storageId}`],
      }),
      abortSignal: signal,
    } as Docker.NetworkListOptions);
    const out: string[] = [];
    for (const network of networks) {
      const name = network.Options?.[BRIDGE_NAME_OPTION] ?? `br-${network.Id.slice(0, 12)}`;
      if (IFNAME.test(name)) out.push(name);
      else this.#log.warn({ network: network.Name, bridge: name }, "tenant network's bridge name not usable");
    }
    return out;
  }

  /** The table as the kernel holds it now; empty when it is absent. */
  async #listing(signal: AbortSignal): Promise<string> {
    try {
      return await runNft(["-s", "list", "table", "inet", this.table], undefined, this.#nft(signal));
    } catch {
      return "";
    }
  }

  #nft(signal: AbortSignal) {
    return {
      clock: this.#options.clock,
      signal,
      ...(this.#options.nftBin === undefined ? {} : { bin: this.#options.nftBin }),
    };
  }

  #scheduleSweep(): void {
    if (this.#state !== "enforcing") return;
    this.#stopSweep = this.#options.clock.setTimer(this.#options.sweepIntervalMs, () => {
      const pass = new AbortController();
      this.#stopSweep = () => pass.abort();
      void this.sweep(pass.signal)
        .catch((err) => this.#log.warn({ err }, "egress sweep failed; the next one retries"))
        .finally(() => this.#scheduleSweep());
    });
  }

  /**
   * Stops the sweep. The table stays in the kernel: tenant containers keep running while the
   * backend is down, and the next start takes the table over as it finds it.
   */
  async close(): Promise<void> {
    if (this.#state === "closed") return;
    this.#state = "closed";
    this.#stopSweep();
    await this.#serial.idle();
  }
}
