import { spawnSync } from "node:child_process";

/**
 * `promtool check metrics` on an exposition text: Prometheus' own lint (a `_total` name
 * only on a counter, units in names, help text present). CI installs promtool (the
 * prometheus package) and sets REQUIRE_DEPLOY_TOOLS=1, so there a missing tool fails;
 * elsewhere the check is skipped with the reason.
 */
export function promtoolAvailable(): boolean {
  return spawnSync("sh", ["-c", "command -v promtool"]).status === 0;
}

export const PROMTOOL_SKIP =
  process.env.REQUIRE_DEPLOY_TOOLS === "1" || promtoolAvailable()
    ? false
    : "promtool is not installed (apt-get install prometheus)";

/** promtool's complaints about `text` ("" when it has none). */
export function promtoolMetricsProblems(text: string): string {
  const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  if (r.error !== undefined) throw r.error;
  return r.status === 0 ? "" : `${r.stdout}${r.stderr}`.trim();
}
