// Time-series charts (uPlot, on canvas) and the Charts page over /api/series. Each chart
// is a figure with a caption and a text line of the latest values, so its gist does not
// depend on seeing the canvas.
import uPlot from "uplot";
import { useApi } from "./api.js";
import { alignSeries, formatNumber, UNKNOWN } from "./format.js";
import { html, useEffect, useRef } from "./html.js";
import { WINDOWS } from "./route.js";
import { LoadStatus } from "./ui.js";

export const COLORS = ["#1d4ed8", "#b91c1c", "#047857", "#b45309", "#6d28d9", "#0e7490"];
const HEIGHT = 200;

/**
 * One chart. `series` is [{label, points: [[t, v]…]}]; `format` renders a value;
 * `bars` draws bars (per-hour counts) instead of lines.
 */
export function TimeChart({ title, series, format = (v) => formatNumber(v), bars = false }) {
  const box = useRef(null);
  const plot = useRef(null);
  const data = alignSeries(series.map((s) => s.points));
  const labels = series.map((s) => s.label).join("\u0000");
  const empty = data[0].length === 0;

  useEffect(() => {
    if (empty) return undefined;
    const el = box.current;
    const opts = {
      width: Math.max(el.clientWidth, 200),
      height: HEIGHT,
      legend: { live: true },
      // Bars centre on their hour: half a step of room at each end keeps the first and last whole.
      scales: {
        x: bars ? { time: true, range: (_u, min, max) => padded(min, max, data[0]) } : { time: true },
      },
      axes: [{}, { values: (_u, ticks) => ticks.map((v) => format(v)), size: 70 }],
      series: [
        {},
        ...series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length],
          fill: bars ? `${COLORS[i % COLORS.length]}99` : undefined,
          width: 2,
          // Side by side: the first series' bar left of the tick, the second's right of it.
          paths: bars ? uPlot.paths.bars({ size: [0.4, 40], align: i === 0 ? -1 : 1 }) : undefined,
          points: bars ? { show: false } : undefined,
          value: (_u, v) => (v == null ? UNKNOWN : format(v)),
        })),
      ],
    };
    const p = new uPlot(opts, data, el);
    plot.current = p;
    const resize = new ResizeObserver(() =>
      p.setSize({ width: Math.max(el.clientWidth, 200), height: HEIGHT }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      p.destroy();
      plot.current = null;
    };
    // Rebuilt only when the set of series changes; new samples go through setData below.
  }, [labels, empty, bars]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  const latest = series.map((s) => {
    const last = s.points.at(-1);
    return `${s.label} ${last === undefined || last[1] == null ? UNKNOWN : format(last[1])}`;
  });
  return html`<figure class="chart">
    <figcaption>${title}</figcaption>
    ${empty ? html`<p class="muted">No samples yet.</p>` : html`<div class="chart-box" ref=${box}></div>`}
    ${latest.length > 0 && html`<p class="chart-latest">Latest: ${latest.join(" · ")}</p>`}
  </figure>`;
}

/** The x range of bars at times `xs`: half the smallest step beyond each end. */
function padded(min, max, xs) {
  let step = Number.POSITIVE_INFINITY;
  for (let i = 1; i < xs.length; i++) step = Math.min(step, xs[i] - xs[i - 1]);
  const half = Number.isFinite(step) ? step / 2 : 1800;
  return [min - half, max + half];
}

/** The Charts page: /api/series for the chosen window. */
export function ChartsPage({ params, tick }) {
  const state = useApi(`/api/series?window=${params.window}`, tick);
  const s = state.data?.series;
  return html`<section aria-labelledby="page-title">
    <h1 id="page-title" tabindex="-1">Charts</h1>
    <fieldset class="window-picker">
      <legend>Window</legend>
      ${WINDOWS.map(
        (w) => html`<label key=${w}>
          <input
            type="radio"
            name="window"
            value=${w}
            checked=${params.window === w}
            onChange=${() => {
              location.hash = `#/charts?window=${w}`;
            }}
          />
          ${w}
        </label>`,
      )}
    </fieldset>
    <${LoadStatus} state=${state} what="the series" />
    ${
      s &&
      html`<p class="muted">
          One sample every ${state.data.step_seconds} s, kept in providerd's memory (lost at a restart).
        </p>
        <div class="charts">
          <${TimeChart} title="Active leases" series=${[{ label: "leases", points: s.leases_active }]} />
          <${TimeChart}
            title="Provisions per minute"
            series=${[{ label: "provisions/min", points: s.provisions_per_minute }]}
          />
          <${TimeChart}
            title="Provision latency"
            format=${(v) => `${formatNumber(v)} s`}
            series=${[
              { label: "p50", points: s.provision_latency_p50_seconds },
              { label: "p99", points: s.provision_latency_p99_seconds },
            ]}
          />
          <${TimeChart}
            title="Tenant API requests and errors per second"
            series=${[
              { label: "requests/s", points: s.api_requests_per_second },
              { label: "errors/s", points: s.api_errors_per_second },
            ]}
          />
          <${TimeChart}
            title="Earnings (base units)"
            series=${Object.entries(s.earnings ?? {}).map(([denom, points]) => ({ label: denom, points }))}
          />
        </div>`
    }
  </section>`;
}
