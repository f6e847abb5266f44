import type { Registry } from "prom-client";

/**
 * Reads of providerd's own prom-client registry: the dashboard shows the figures
 * `/metrics` exports (billing's counters) instead of keeping a second count. A family
 * that is not registered (a component that is off) reads as empty.
 */
export async function metricValues(
  registry: Registry,
  name: string,
): Promise<{ value: number; labels: Record<string, string | number> }[]> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) return [];
  const data = await metric.get();
  return data.values.map((v) => ({ value: v.value, labels: v.labels as Record<string, string | number> }));
}

export async function metricSum(
  registry: Registry,
  name: string,
  match: Readonly<Record<string, string>> = {},
): Promise<number> {
  let sum = 0;
  for (const v of await metricValues(registry, name)) {
    if (Object.entries(match).every(([k, want]) => String(v.labels[k]) === want)) sum += v.value;
  }
  return sum;
}

/** A counter's values summed by one label (e.g. withdrawn amounts by denom). */
export async function metricByLabel(
  registry: Registry,
  name: string,
  label: string,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const v of await metricValues(registry, name)) {
    const key = v.labels[label];
    if (key === undefined) continue;
    out.set(String(key), (out.get(String(key)) ?? 0) + v.value);
  }
  return out;
}
