// One lease: chain state, placement, attempts, releases, diagnostics, events and usage.
// Image names, reasons and event details are tenant-influenced: all of it is text.
import { useApi } from "./api.js";
import { formatBytes, formatDuration, formatNumber, UNKNOWN } from "./format.js";
import { html } from "./html.js";
import { DataTable, Facts, LoadStatus, ObjectFacts, Time } from "./ui.js";

export function LeasePage({ params, tick }) {
  const state = useApi(`/api/leases/${params.uuid}`, tick);
  const l = state.data;
  const missing = state.error?.status === 404;
  return html`<section aria-labelledby="page-title">
    <h1 id="page-title" tabindex="-1">Lease <code>${params.uuid}</code></h1>
    <p><a href="#/leases">All leases</a></p>
    ${missing ? html`<p class="load-status" aria-live="polite">No such lease on this provider.</p>` : html`<${LoadStatus} state=${state} what="the lease" />`}
    ${l && !missing && html`<${Lease} l=${l} />`}
  </section>`;
}

/** Why releases, diagnostics or usage may be missing: the owner backend's read. */
const BACKEND_READ = {
  failed: "The backend that holds this lease did not answer: releases, diagnostics and usage may be missing.",
  no_owner: "No backend holds this lease: there are no releases, diagnostics or usage to read.",
};

function Lease({ l }) {
  const note = BACKEND_READ[l.backend_read];
  return html`
    ${note && html`<p class="note">${note}</p>`}
    <div class="cards">
      <section class="card" aria-labelledby="chain-h">
        <h2 id="chain-h">Chain</h2>
        ${
          l.chain === null
            ? html`<p>Not found on chain.</p>`
            : html`<${Facts}
                items=${[
                  ["Tenant", html`<code class="addr">${l.tenant}</code>`],
                  ["State", l.chain.state],
                  ["Created", html`<${Time} iso=${l.chain.created_at} />`],
                  ["Closed", html`<${Time} iso=${l.chain.closed_at} />`],
                  ["Items", l.chain.items.map((i) => `${i.quantity} × ${i.sku}`).join(", ") || UNKNOWN],
                ]}
              />`
        }
      </section>
      <section class="card" aria-labelledby="placement-h">
        <h2 id="placement-h">Placement</h2>
        ${
          l.placement === null
            ? html`<p>No placement record.</p>`
            : html`<${Facts}
                items=${[
                  ["Backend", l.placement.backend ?? UNKNOWN],
                  ["State", l.placement.state],
                  ["Since", html`<${Time} iso=${l.placement.since} />`],
                  ...(l.placement.candidates?.length
                    ? [["Candidates", l.placement.candidates.join(", ")]]
                    : []),
                ]}
              />`
        }
      </section>
    </div>
    <section aria-labelledby="releases-h">
      <h2 id="releases-h">Releases</h2>
      <${DataTable}
        caption="Releases, newest last"
        rowKey=${(r) => `${r.version}-${r.created_at}`}
        empty="No release yet."
        columns=${[
          ["Version", (r) => r.version ?? UNKNOWN, "num"],
          ["Status", (r) => r.status ?? UNKNOWN],
          ["Image", (r) => (r.image == null ? UNKNOWN : html`<code>${r.image}</code>`)],
          ["Created", (r) => html`<${Time} iso=${r.created_at} />`],
          ["Reason", (r) => r.reason ?? ""],
        ]}
        rows=${l.releases}
      />
    </section>
    <section aria-labelledby="attempts-h">
      <h2 id="attempts-h">Attempts</h2>
      <${DataTable}
        caption="Provision and maintenance attempts"
        rowKey=${(a) => a.id}
        empty="No attempt recorded."
        columns=${[
          ["Attempt", (a) => html`<code>${a.id}</code>`],
          ["Kind", (a) => a.kind],
          ["Backend", (a) => a.backend],
          ["Outcome", (a) => a.outcome ?? UNKNOWN],
          ["Started", (a) => html`<${Time} iso=${a.started_at} />`],
          ["Settled", (a) => html`<${Time} iso=${a.settled_at} />`],
        ]}
        rows=${l.attempts}
      />
    </section>
    <section aria-labelledby="events-h">
      <h2 id="events-h">Events</h2>
      <${DataTable}
        caption="Events, oldest first"
        empty="No event recorded."
        columns=${[
          ["At", (e) => html`<${Time} iso=${e.at} />`],
          ["Kind", (e) => e.kind],
          ["Detail", (e) => e.detail ?? ""],
        ]}
        rows=${l.events}
      />
    </section>
    <section aria-labelledby="usage-h">
      <h2 id="usage-h">Usage</h2>
      ${l.usage == null ? html`<p>No usage figures for this lease.</p>` : html`<${Usage} usage=${l.usage} />`}
    </section>
    <section class="card narrow" aria-labelledby="diag-h">
      <h2 id="diag-h">Diagnostics</h2>
      <${ObjectFacts} value=${l.diagnostics} />
    </section>
  `;
}

/** The backend's last usage sample per instance (GET /usage through providerd). */
function Usage({ usage }) {
  const of = (used, limit, fmt) =>
    used == null ? UNKNOWN : limit == null ? fmt(used) : `${fmt(used)} of ${fmt(limit)}`;
  return html`
    <${DataTable}
      caption=${`Last sample per instance (every ${usage.sample_interval_seconds ?? "?"} s)`}
      empty="No instance sampled."
      columns=${[
        ["Instance", (u) => `${u.service ?? "?"}/${u.instance ?? 0}`],
        ["CPU", (u) => of(u.cpu_cores, u.cpu_limit_cores, (v) => `${formatNumber(v)} cores`)],
        ["Memory", (u) => of(u.memory_bytes, u.memory_limit_bytes, formatBytes)],
        ["Disk", (u) => of(u.disk_bytes, u.disk_quota_bytes, formatBytes)],
        ["Net in / out", (u) => `${formatBytes(u.network_rx_bytes)} / ${formatBytes(u.network_tx_bytes)}`],
        ["Restarts", (u) => formatNumber(u.restarts), "num"],
        ["Up for", (u) => formatDuration(u.uptime_seconds)],
      ]}
      rows=${usage.instances ?? []}
    />
  `;
}
