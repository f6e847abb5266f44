// Overview: leases by state (chain beside placement records), provisions per hour,
// earnings, credit-depletion closes, the reconciler's last sweep and the alerts firing now.
import { useApi } from "./api.js";
import { TimeChart } from "./charts.js";
import { formatAmount, formatDuration, formatNumber, UNKNOWN } from "./format.js";
import { html } from "./html.js";
import { CountTable, DataTable, Facts, LoadStatus, Time } from "./ui.js";

export function OverviewPage({ tick }) {
  const state = useApi("/api/overview", tick);
  const o = state.data;
  return html`<section aria-labelledby="page-title">
    <h1 id="page-title" tabindex="-1">Overview</h1>
    <${LoadStatus} state=${state} what="the overview" />
    ${o && html`<${Overview} o=${o} />`}
  </section>`;
}

function Overview({ o }) {
  const hours = o.provisions_per_hour ?? [];
  const succeeded = hours.reduce((n, h) => n + h.succeeded, 0);
  const failed = hours.reduce((n, h) => n + h.failed, 0);
  const at = (h) => Date.parse(h.hour) / 1000;
  return html`
    <div class="cards">
      <section class="card" aria-labelledby="provider-h">
        <h2 id="provider-h">Provider</h2>
        <${Facts}
          items=${[
            ["Address", html`<code>${o.provider.address}</code>`],
            ["Provider UUID", o.provider.uuid == null ? UNKNOWN : html`<code>${o.provider.uuid}</code>`],
            [
              "Version",
              o.provider.commit
                ? `${o.provider.version} (commit ${o.provider.commit.slice(0, 12)})`
                : o.provider.version,
            ],
            ["Up for", formatDuration(o.provider.uptime_seconds)],
            ["Chain height", formatNumber(o.chain.height)],
            ["Last block", html`<${Time} iso=${o.chain.last_block_at} />`],
            ["Chain lag", o.chain.lag_seconds == null ? UNKNOWN : formatDuration(o.chain.lag_seconds)],
          ]}
        />
      </section>
      <section class="card" aria-labelledby="alerts-h">
        <h2 id="alerts-h">Alerts firing now</h2>
        ${
          o.alerts.length === 0
            ? html`<p class="ok">None.</p>`
            : html`<ul class="alerts">
                ${o.alerts.map(
                  (a) => html`<li key=${a.name}>
                    <span class=${`badge sev-${a.severity === "page" ? "page" : "other"}`}>${a.severity}</span>
                    <strong>${a.name}</strong>: ${a.summary}
                  </li>`,
                )}
              </ul>`
        }
      </section>
    </div>
    <section aria-labelledby="leases-h">
      <h2 id="leases-h">Leases by state</h2>
      <div class="side-by-side">
        <${CountTable} caption="On chain" counts=${o.leases.chain} unknown="unknown: the chain did not answer" />
        <${CountTable} caption="Placement records" counts=${o.leases.records} />
      </div>
    </section>
    <section aria-labelledby="prov-h">
      <h2 id="prov-h">Provisions per hour</h2>
      <p>Last 24 h: ${formatNumber(succeeded)} succeeded, ${formatNumber(failed)} failed.</p>
      <${TimeChart}
        title="Provisions per hour (last 24 h)"
        bars=${true}
        series=${[
          { label: "succeeded", points: hours.map((h) => [at(h), h.succeeded]) },
          { label: "failed", points: hours.map((h) => [at(h), h.failed]) },
        ]}
      />
    </section>
    <div class="cards">
      <section class="card" aria-labelledby="earn-h">
        <h2 id="earn-h">Earnings</h2>
        <${DataTable}
          caption="By denom (base units)"
          columns=${[
            ["Denom", (r) => r.denom],
            ["Withdrawn", (r) => formatAmount(r.withdrawn), "num"],
            ["Accrued", (r) => formatAmount(r.accrued), "num"],
          ]}
          rows=${byDenom(o.earnings)}
          rowKey=${(r) => r.denom}
        />
        <p>Last withdrawal: <${Time} iso=${o.earnings.last_withdrawal_at} /></p>
      </section>
      <section class="card" aria-labelledby="credit-h">
        <h2 id="credit-h">Credit-depletion closes</h2>
        <${Facts}
          items=${[
            ["Last 24 h", formatNumber(o.credit_closes.last_24h)],
            ["Total", formatNumber(o.credit_closes.total)],
          ]}
        />
      </section>
      <section class="card" aria-labelledby="rec-h">
        <h2 id="rec-h">Reconciler</h2>
        <${Facts}
          items=${[
            ["Last sweep", html`<${Time} iso=${o.reconciler.last_sweep_at} />`],
            ["Last success", html`<${Time} iso=${o.reconciler.last_success_at} />`],
            ["Complete", o.reconciler.complete == null ? UNKNOWN : o.reconciler.complete ? "yes" : "no"],
            ["Took", formatDuration(o.reconciler.duration_seconds)],
          ]}
        />
        <${CountTable} caption="Actions of the last sweep" label="Action" counts=${o.reconciler.actions} />
      </section>
    </div>
    <p class="muted">
      Generated <${Time} iso=${o.generated_at} />. Counts made in process (provisions, withdrawals,
      credit closes) start at <${Time} iso=${o.in_process_since} />, when providerd started.
    </p>
  `;
}

/** One row per denom seen in either list, with its withdrawn and accrued amounts. */
function byDenom(earnings) {
  const rows = new Map();
  for (const kind of ["withdrawn", "accrued"]) {
    for (const coin of earnings[kind] ?? []) {
      const row = rows.get(coin.denom) ?? { denom: coin.denom, withdrawn: null, accrued: null };
      row[kind] = coin;
      rows.set(coin.denom, row);
    }
  }
  return [...rows.values()];
}
