// Small pieces every page uses: the load status (a live region, so a screen reader hears a
// failed refresh), count tables and key/value lists. Values are rendered as text only.
import { formatNumber, formatTime, UNKNOWN } from "./format.js";
import { html } from "./html.js";

/** Loading / error line of one API read; stays in the DOM so aria-live announces changes. */
export function LoadStatus({ state, what }) {
  let text = "";
  if (state.error !== null)
    text = `Could not load ${what}: ${state.error.message}${state.data === null ? "" : " (showing the last answer)"}`;
  else if (state.loading && state.data === null) text = `Loading ${what}…`;
  // No child at all when there is nothing to say: the region stays (aria-live needs it in the
  // DOM before its text changes) but takes no room (.load-status:empty).
  return html`<div class=${state.error === null ? "load-status" : "load-status error"} aria-live="polite">${text || null}</div>`;
}

/** A two-column table of label → count, with a caption naming it (tests read it by caption). */
export function CountTable({ caption, counts, label = "State", unknown = "unknown" }) {
  const rows = Object.entries(counts ?? {});
  return html`<table class="counts">
    <caption>${caption}</caption>
    <thead><tr><th scope="col">${label}</th><th scope="col" class="num">Count</th></tr></thead>
    <tbody>
      ${rows.length === 0 ? html`<tr><td colspan="2">${counts == null ? unknown : "none"}</td></tr>` : null}
      ${rows.map(
        ([k, v]) => html`<tr key=${k}><th scope="row">${k}</th><td class="num">${formatNumber(v)}</td></tr>`,
      )}
    </tbody>
  </table>`;
}

/** A definition list of [label, value] pairs; objects and arrays are shown as JSON text. */
export function Facts({ items }) {
  return html`<dl class="facts">
    ${items.map(
      ([k, v]) =>
        html`<div key=${k}><dt>${k}</dt><dd>${v === null || v === undefined ? UNKNOWN : v}</dd></div>`,
    )}
  </dl>`;
}

/** Any JSON object the API returns whose shape the page does not pin (diagnostics, usage). */
export function ObjectFacts({ value }) {
  if (value === null || value === undefined) return html`<p>${UNKNOWN}</p>`;
  return html`<${Facts}
    items=${Object.entries(value).map(([k, v]) => [k, factValue(v)])}
  />`;
}

function factValue(v) {
  if (v === null || v === undefined) return UNKNOWN;
  if (typeof v === "object") return html`<code class="json">${JSON.stringify(v, null, 1)}</code>`;
  return String(v);
}

export function Time({ iso }) {
  return iso == null ? UNKNOWN : html`<time datetime=${iso}>${formatTime(iso)}</time>`;
}

/** A table from rows and [heading, cell(row)] columns; the first column heads each row. */
export function DataTable({ caption, columns, rows, empty = "none", rowKey }) {
  return html`<div class="table-wrap"><table>
    <caption>${caption}</caption>
    <thead><tr>${columns.map(([head, , cls]) => html`<th scope="col" class=${cls}>${head}</th>`)}</tr></thead>
    <tbody>
      ${rows.length === 0 ? html`<tr><td colspan=${columns.length}>${empty}</td></tr>` : null}
      ${rows.map(
        (row, i) => html`<tr key=${rowKey ? rowKey(row) : i}>
          ${columns.map(([, cell, cls], c) =>
            c === 0
              ? html`<th scope="row" class=${cls}>${cell(row)}</th>`
              : html`<td class=${cls}>${cell(row)}</td>`,
          )}
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}
