// Text for the figures the API returns (pure: Node tests import it). Unknown values (null)
// are shown as an em dash, never as a made-up zero.

export const UNKNOWN = "—";

/** "123,456 umfx" from {denom, amount}: amounts are integer strings in base units. */
export function formatAmount(coin) {
  if (coin == null) return UNKNOWN;
  let amount;
  try {
    amount = BigInt(coin.amount).toLocaleString("en-US");
  } catch {
    amount = String(coin.amount);
  }
  return `${amount} ${coin.denom}`;
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

export function formatBytes(n) {
  if (n == null || !Number.isFinite(n)) return UNKNOWN;
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

export function formatNumber(n, digits = 2) {
  if (n == null || !Number.isFinite(n)) return UNKNOWN;
  return Number(n.toFixed(digits)).toLocaleString("en-US", { maximumFractionDigits: digits });
}

export function formatDuration(seconds) {
  if (seconds == null || !Number.isFinite(seconds)) return UNKNOWN;
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m} min ${Math.floor(seconds % 60)} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** "2026-12-05 14:03:12 UTC (3 min ago)" from an RFC 3339 string, relative to `now`. */
export function formatTime(iso, now = Date.now()) {
  if (iso == null) return UNKNOWN;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return String(iso);
  const abs = new Date(t)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$|Z$/, " UTC");
  const ago = (now - t) / 1000;
  if (ago < -5) return abs;
  return `${abs} (${ago < 5 ? "just now" : `${formatDuration(ago)} ago`})`;
}

/** [allocated, total] as "1.5 of 8" with a unit formatter, or the unknown mark. */
export function formatUsage(pair, fmt) {
  if (pair == null) return UNKNOWN;
  return `${fmt(pair.allocated)} of ${fmt(pair.total)}`;
}

/**
 * Series of [t, v] pairs aligned on the union of their times, as uPlot wants them:
 * [[t…], [v…], …] with null where a series has no sample at that time.
 */
export function alignSeries(list) {
  const times = [...new Set(list.flatMap((s) => (s ?? []).map((p) => p[0])))].sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const columns = list.map((s) => {
    const col = new Array(times.length).fill(null);
    for (const [t, v] of s ?? []) col[index.get(t)] = v;
    return col;
  });
  return [times, ...columns];
}
