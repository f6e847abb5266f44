import { formatGoDuration } from "../duration.ts";
import type { Manifest } from "./parse.ts";

/**
 * Writes a parsed manifest back as a stack document (plain JSON values, durations as Go
 * duration text such as "30s"). Parsing the result yields the same manifest, so backends
 * can store and forward the normalised form.
 */
export function formatManifest(manifest: Manifest): { services: Record<string, Record<string, unknown>> } {
  const services: Record<string, Record<string, unknown>> = {};
  for (const [name, spec] of Object.entries(manifest.services)) {
    const { health_check, stop_grace_period, ...plain } = spec;
    const out: Record<string, unknown> = { ...plain };
    if (health_check !== undefined) {
      const { interval, timeout, start_period, ...rest } = health_check;
      const check: Record<string, unknown> = { ...rest };
      if (interval !== undefined) check["interval"] = formatGoDuration(interval);
      if (timeout !== undefined) check["timeout"] = formatGoDuration(timeout);
      if (start_period !== undefined) check["start_period"] = formatGoDuration(start_period);
      out["health_check"] = check;
    }
    if (stop_grace_period !== undefined) out["stop_grace_period"] = formatGoDuration(stop_grace_period);
    services[name] = out;
  }
  return { services };
}
