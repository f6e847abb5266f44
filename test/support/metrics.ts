import assert from "node:assert/strict";
import { PROMTOOL_SKIP, promtoolMetricsProblems } from "./promtool.ts";

/**
 * Reading a Prometheus exposition in tests: `scrape` fetches `/metrics` and has promtool
 * lint it (when promtool is installed, see promtool.ts); `sample` is the value of one
 * series, matched by name and by the labels given (others may be present), summed over
 * every series that matches (undefined when none does).
 */
export async function scrape(url: string, init: RequestInit = {}): Promise<string> {
  const res = await fetch(url, init);
  assert.equal(res.status, 200, `GET ${url}`);
  const text = await res.text();
  if (PROMTOOL_SKIP === false) assert.equal(promtoolMetricsProblems(text), "", "promtool check metrics");
  return text;
}

export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let total: number | undefined;
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || !line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have = new Map<string, string>();
    for (const pair of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      have.set(pair[1]!, pair[2]!);
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) total = (total ?? 0) + Number(m[3]);
  }
  return total;
}
