// Fleet: one row per configured backend, with health, identity, service state, breaker,
// resources allocated of total (a meter each), leases and the last inventory.
import { useApi } from "./api.js";
import { formatBytes, formatNumber, formatUsage, UNKNOWN } from "./format.js";
import { html } from "./html.js";
import { DataTable, LoadStatus, Time } from "./ui.js";

export function FleetPage({ tick }) {
  const state = useApi("/api/fleet", tick);
  const backends = state.data?.backends;
  return html`<section aria-labelledby="page-title">
    <h1 id="page-title" tabindex="-1">Fleet</h1>
    <${LoadStatus} state=${state} what="the fleet" />
    ${
      backends &&
      html`<${DataTable}
        caption=${`Backends (${backends.length})`}
        rowKey=${(b) => b.name}
        columns=${[
          ["Backend", (b) => html`<span class="name">${b.name}</span><br /><small>${b.url_host}</small>`],
          [
            "Health",
            (b) =>
              html`<span class=${b.healthy ? "badge ok" : "badge bad"}>${b.healthy ? "healthy" : "unhealthy"}</span>`,
          ],
          ["Version", (b) => b.version ?? UNKNOWN],
          [
            "Storage ID",
            // The first group is enough to tell backends apart; the whole ID is in the title.
            (b) =>
              b.storage_id == null
                ? UNKNOWN
                : html`<code title=${b.storage_id}>${b.storage_id.split("-")[0]}…</code>`,
          ],
          ["Service", serviceState],
          ["Breaker", breakerState],
          [
            "CPU",
            (b) =>
              html`<${Usage} label=${`${b.name} CPU allocated`} pair=${b.cpu} fmt=${formatNumber} unit=" cores" />`,
          ],
          [
            "Memory",
            (b) =>
              html`<${Usage} label=${`${b.name} memory allocated`} pair=${b.memory} fmt=${formatBytes} />`,
          ],
          [
            "Disk",
            (b) => html`<${Usage} label=${`${b.name} disk allocated`} pair=${b.disk} fmt=${formatBytes} />`,
          ],
          ["Leases", (b) => formatNumber(b.leases), "num"],
          ["SKUs", (b) => formatNumber(b.skus.length), "num"],
          ["Last inventory", (b) => html`<${Time} iso=${b.last_inventory_at} />`],
        ]}
        rows=${backends}
        empty="No backends configured."
      />`
    }
  </section>`;
}

function breakerState(b) {
  if (b.breaker == null) return UNKNOWN;
  return html`<span class=${b.breaker === "closed" ? "badge ok" : "badge bad"}>${b.breaker.replace("_", " ")}</span>`;
}

function serviceState(b) {
  if (b.fenced) return html`<span class="badge bad">fenced</span>`;
  if (b.draining) return html`<span class="badge warn">draining</span>`;
  return html`<span class="badge ok">in service</span>`;
}

/** "1.5 of 8 cores" above a meter (the native element: no inline style, readable by AT). */
function Usage({ label, pair, fmt, unit = "" }) {
  if (pair == null) return UNKNOWN;
  const max = pair.total > 0 ? pair.total : 1;
  return html`<div class="usage">
    <span>${formatUsage(pair, fmt)}${unit}</span>
    <meter aria-label=${label} min="0" max=${max} low=${max * 0.7} high=${max * 0.9} optimum="0" value=${Math.min(pair.allocated, max)}></meter>
  </div>`;
}
