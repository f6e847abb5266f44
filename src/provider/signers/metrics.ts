/**
 * `fred_signer_*`: the sub-signer lanes as Prometheus sees them, read at scrape time from
 * the live lanes and supervisor (nothing here is on a tx path).
 */
import type { Registry } from "prom-client";
import { scrapeCounter, scrapeGauge } from "../../chain/metrics.ts";
import type { Signers } from "./signers.ts";

export function registerSignerMetrics(registry: Registry, signers: Signers): void {
  const lanes = signers.subLanes;
  const gauge = scrapeGauge(registry);
  const counter = scrapeCounter(registry);
  gauge("fred_signer_lanes", "Lease-tx signing lanes, by state", ["state"], (g) => {
    if (lanes === undefined) {
      g.set({ state: "provider_key" }, 1);
      return;
    }
    const by = { active: 0, starting: 0, demoted: 0 };
    for (const l of lanes.view()) by[l.state]++;
    for (const [state, n] of Object.entries(by)) g.set({ state }, n);
  });
  if (lanes === undefined) return;
  gauge(
    "fred_signer_balance",
    "Last read fee balance of each sub-signer",
    ["lane", "address", "denom"],
    (g) => {
      for (const l of lanes.view())
        if (l.balance !== undefined)
          g.set({ lane: String(l.index), address: l.address, denom: lanes.denom }, Number(l.balance));
    },
  );
  const stat = (name: string, help: string, read: () => number) =>
    counter(name, help, [], (set) => set(read()));
  stat(
    "fred_signer_demotions_total",
    "Lanes demoted (grant missing and refused)",
    () => lanes.stats.demotions,
  );
  stat("fred_signer_restarts_total", "Lanes restarted after a signer fault", () => lanes.stats.restarts);
  stat(
    "fred_signer_grants_created_total",
    "Authz grants the provider created",
    () => lanes.stats.grantsCreated,
  );
  stat("fred_signer_top_ups_total", "Sub-signer top-ups sent", () => lanes.stats.topUps);
  const supervisor = signers.supervisor;
  if (supervisor !== undefined)
    counter("fred_signer_checks_total", "Converging passes, by outcome", ["outcome"], (set) => {
      for (const [outcome, n] of supervisor.passes) set(n, { outcome });
    });
}
