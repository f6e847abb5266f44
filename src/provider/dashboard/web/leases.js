// Leases: search by lease UUID (or its prefix) or tenant address, filter by state, backend
// and SKU, page with the API's next_cursor. The filters live in the hash, so a search is a
// link an operator can share or reload.
import { useApi } from "./api.js";
import { html, useState } from "./html.js";
import { leasesApiPath, leasesHash } from "./route.js";
import { DataTable, LoadStatus, Time } from "./ui.js";

const STATES = [
  ["pending", "pending (chain)"],
  ["active", "active (chain)"],
  ["closed", "closed (chain)"],
  ["rejected", "rejected (chain)"],
  ["expired", "expired (chain)"],
  ["confirmed", "confirmed (record)"],
  ["provisioning", "provisioning (record)"],
  ["conflict", "conflict (record)"],
];

export function LeasesPage({ params, tick }) {
  const state = useApi(leasesApiPath(params), tick);
  // The fleet gives the backend names and SKUs the filters offer.
  const fleet = useApi("/api/fleet", 0);
  const backends = fleet.data?.backends ?? [];
  const skus = [...new Set(backends.flatMap((b) => b.skus))].sort();
  const leases = state.data?.leases;
  return html`<section aria-labelledby="page-title">
    <h1 id="page-title" tabindex="-1">Leases</h1>
    <${SearchForm} key=${leasesHash({ ...params, cursor: undefined })} params=${params} backends=${backends} skus=${skus} />
    <${LoadStatus} state=${state} what="the leases" />
    ${
      leases &&
      html`<${DataTable}
          caption=${params.cursor ? "Leases (a later page)" : "Leases"}
          rowKey=${(l) => l.uuid}
          empty="No lease matches."
          columns=${[
            ["Lease", (l) => html`<a href=${`#/leases/${l.uuid}`}><code>${l.uuid}</code></a>`],
            ["Tenant", (l) => html`<code class="addr">${l.tenant}</code>`],
            ["State", (l) => l.state],
            ["Record", (l) => l.record_state ?? "—"],
            ["Backend", (l) => l.backend ?? "—"],
            ["SKU", (l) => (l.sku == null ? "—" : html`<code>${l.sku}</code>`)],
            ["Created", (l) => html`<${Time} iso=${l.created_at} />`],
          ]}
          rows=${leases}
        />
        ${
          state.data.truncated &&
          html`<p class="note">Only the first 50,000 leases (by UUID) are searched; the overview's counts cover all.</p>`
        }
        <nav class="pager" aria-label="Pages">
          ${params.cursor && html`<a href=${leasesHash({ ...params, cursor: undefined })}>First page</a>`}
          ${
            state.data.next_cursor &&
            html`<a href=${leasesHash({ ...params, cursor: state.data.next_cursor })}>Next page</a>`
          }
        </nav>`
    }
  </section>`;
}

function SearchForm({ params, backends, skus }) {
  const [draft, setDraft] = useState({
    q: params.q ?? "",
    state: params.state ?? "",
    backend: params.backend ?? "",
    sku: params.sku ?? "",
  });
  const set = (key) => (e) => setDraft({ ...draft, [key]: e.currentTarget.value });
  const submit = (e) => {
    e.preventDefault();
    location.hash = leasesHash({ ...draft, q: draft.q.trim() });
  };
  return html`<form class="search" role="search" onSubmit=${submit}>
    <div class="field wide">
      <label for="lease-q">Lease UUID or tenant address</label>
      <input id="lease-q" type="search" name="q" value=${draft.q} onInput=${set("q")} autocomplete="off" spellcheck="false" />
    </div>
    <div class="field">
      <label for="lease-state">State</label>
      <select id="lease-state" name="state" value=${draft.state} onChange=${set("state")}>
        <option value="">any</option>
        ${STATES.map(([v, text]) => html`<option key=${v} value=${v}>${text}</option>`)}
      </select>
    </div>
    <div class="field">
      <label for="lease-backend">Backend</label>
      <select id="lease-backend" name="backend" value=${draft.backend} onChange=${set("backend")}>
        <option value="">any</option>
        ${backends.map((b) => html`<option key=${b.name} value=${b.name}>${b.name}</option>`)}
        ${draft.backend && !backends.some((b) => b.name === draft.backend) && html`<option value=${draft.backend}>${draft.backend}</option>`}
      </select>
    </div>
    <div class="field">
      <label for="lease-sku">SKU</label>
      <select id="lease-sku" name="sku" value=${draft.sku} onChange=${set("sku")}>
        <option value="">any</option>
        ${skus.map((s) => html`<option key=${s} value=${s}>${s}</option>`)}
        ${draft.sku && !skus.includes(draft.sku) && html`<option value=${draft.sku}>${draft.sku}</option>`}
      </select>
    </div>
    <div class="field actions">
      <button type="submit">Search</button>
    </div>
  </form>`;
}
