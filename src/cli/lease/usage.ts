import type { Command } from "commander";
import { leaseArg } from "../chain.ts";
import { apiForLease, type LeaseFlags, withLeaseFlags } from "./context.ts";
import { emit, outputMode, table } from "./view.ts";

/**
 * `fred lease usage <uuid>`: what the lease's instances use. On a terminal a table, one
 * row per instance, with sparklines of the last hour of CPU and memory; piped (or with
 * --output json) the API's body as it is.
 */
export function registerLeaseUsage(lease: Command): void {
  withLeaseFlags(
    lease
      .command("usage")
      .description("CPU, memory, network and disk each instance uses, with the last hour as sparklines"),
  )
    .argument("<uuid>", "lease UUID")
    .addHelpText(
      "after",
      `
CPU is used / allowed cores, averaged over the last sample interval (throttled seconds beside it
once the SKU's cores were not enough); memory and disk are used / limit; network counts
since the instance started. Sparklines span the last hour (oldest left).

Examples:
  $ fred lease usage $LEASE --from tenant1 --home .fred/devnet
  $ fred lease usage $LEASE --output json --key-hex $KEY | jq '.instances[].cpu_cores'`,
    )
    .action(async (uuid: string, opts: LeaseFlags) => {
      const mode = outputMode(opts);
      const api = await apiForLease(opts, leaseArg(uuid));
      const { body } = await api.lease(uuid, "usage");
      emit(mode, body, () => usageLines(body));
    });
}

type Row = Record<string, unknown>;

/** The text view of a usage body: a table, or a line saying nothing was sampled yet. */
export function usageLines(body: Row): string[] {
  const instances = Array.isArray(body.instances) ? (body.instances as Row[]) : [];
  if (instances.length === 0)
    return ["no instance sampled yet (a starting lease shows up within one interval)"];
  const history = (body.history ?? {}) as { instances?: Row[] };
  const seriesOf = (i: Row, metric: string): (number | null)[] => {
    const h = history.instances?.find((x) => x.service === i.service && x.instance === i.instance);
    return Array.isArray(h?.[metric]) ? (h[metric] as (number | null)[]) : [];
  };
  const rows = instances.map((i) => [
    `${String(i.service)}/${String(i.instance)}`,
    `${cores(i.cpu_cores)} / ${cores(i.cpu_limit_cores)}${Number(i.cpu_throttled_seconds) > 0 ? ` (${seconds(i.cpu_throttled_seconds)} throttled)` : ""}`,
    sparkline(
      seriesOf(i, "cpu_cores"),
      typeof i.cpu_limit_cores === "number" ? i.cpu_limit_cores : undefined,
    ),
    `${bytes(i.memory_bytes)} / ${bytes(i.memory_limit_bytes)}`,
    sparkline(
      seriesOf(i, "memory_bytes"),
      typeof i.memory_limit_bytes === "number" ? i.memory_limit_bytes : undefined,
    ),
    `${bytes(i.network_rx_bytes)} / ${bytes(i.network_tx_bytes)}`,
    `${bytes(i.disk_bytes)} / ${bytes(i.disk_quota_bytes)}`,
    String(i.restarts ?? "-"),
    seconds(i.uptime_seconds),
  ]);
  return table([
    ["INSTANCE", "CPU CORES", "CPU 1H", "MEMORY", "MEMORY 1H", "NET IN / OUT", "DISK", "RESTARTS", "UPTIME"],
    ...rows,
  ]);
}

const BARS = "▁▂▃▄▅▆▇█";
const WIDTH = 24;

/**
 * `values` squeezed into WIDTH bars (each the mean of its slice; a slice with no sample is
 * a space), scaled from zero to `max` (default: the largest value, so a flat line shows low).
 */
export function sparkline(values: readonly (number | null)[], max?: number): string {
  if (values.length === 0) return "-";
  const width = Math.min(WIDTH, values.length);
  const buckets: (number | undefined)[] = [];
  for (let b = 0; b < width; b++) {
    const slice = values
      .slice(Math.floor((b * values.length) / width), Math.floor(((b + 1) * values.length) / width))
      .filter((v): v is number => typeof v === "number");
    buckets.push(slice.length === 0 ? undefined : slice.reduce((a, v) => a + v, 0) / slice.length);
  }
  const top = max ?? Math.max(0, ...buckets.filter((v): v is number => v !== undefined));
  return buckets
    .map((v) => {
      if (v === undefined) return " ";
      if (top <= 0) return BARS[0];
      return BARS[Math.min(BARS.length - 1, Math.floor((v / top) * BARS.length))];
    })
    .join("");
}

function cores(v: unknown): string {
  return typeof v === "number" ? `${Number(v.toFixed(v < 0.1 ? 3 : 2))}` : "-";
}

/** 1536 → "1.5 KiB". */
export function bytes(v: unknown): string {
  if (typeof v !== "number") return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let n = v;
  let u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u++;
  }
  return `${u === 0 ? n : n.toFixed(n < 10 ? 1 : 0)} ${units[u]}`;
}

/** 42 → "42s", 300 → "5m", 7200 → "2h", 3 days → "3d". */
function seconds(v: unknown): string {
  if (typeof v !== "number") return "-";
  if (v < 120) return `${Math.round(v * 10) / 10}s`;
  if (v < 7200) return `${Math.floor(v / 60)}m`;
  if (v < 172_800) return `${Math.floor(v / 3600)}h`;
  return `${Math.floor(v / 86_400)}d`;
}
