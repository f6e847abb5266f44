import type { BackendStats } from "../backend-client/index.ts";
import type { BackendConfig } from "../config/index.ts";

/**
 * What `GET /v1/provider` says about each configured backend, kept from the routing
 * poll of `/stats` (main.ts feeds every round in) so that answering a tenant never calls
 * a backend. A backend's registry allowlist is kept from its last successful reading:
 * an outage changes its availability, not what it was last known to accept.
 *
 * Availability, first match wins: `fenced` (configured so; never polled), `unknown` (no
 * reading yet), `unreachable` (the last reading failed), `draining` (configured so; takes
 * no new leases), `available`.
 */
export type BackendAvailability = "available" | "draining" | "fenced" | "unreachable" | "unknown";

export interface BackendEntry {
  name: string;
  skus: readonly string[];
  isDefault: boolean;
  status: BackendAvailability;
  /** A list: exactly these registry domains; null: any registry; undefined: never said. */
  allowedRegistries: readonly string[] | null | undefined;
}

interface Reading {
  reachable: boolean;
  allowedRegistries: readonly string[] | null | undefined;
}

export class BackendCatalog {
  readonly #backends: readonly BackendConfig[];
  readonly #readings = new Map<string, Reading>();

  constructor(backends: readonly BackendConfig[]) {
    this.#backends = backends;
  }

  /** One poll round: each backend's `/stats` answer, undefined where the read failed. */
  record(readings: ReadonlyMap<string, BackendStats | undefined>): void {
    for (const [name, stats] of readings) {
      const known = this.#readings.get(name)?.allowedRegistries;
      this.#readings.set(
        name,
        stats === undefined
          ? { reachable: false, allowedRegistries: known }
          : { reachable: true, allowedRegistries: stats.allowedRegistries },
      );
    }
  }

  entries(): BackendEntry[] {
    return this.#backends.map((b) => {
      const reading = this.#readings.get(b.name);
      let status: BackendAvailability = "available";
      if (b.fenced) status = "fenced";
      else if (reading === undefined) status = "unknown";
      else if (!reading.reachable) status = "unreachable";
      else if (b.draining) status = "draining";
      return {
        name: b.name,
        skus: b.skus,
        isDefault: b.isDefault,
        status,
        allowedRegistries: reading?.allowedRegistries,
      };
    });
  }
}

/**
 * The registries a new lease may use, over the backends that take new leases (not fenced
 * or draining) and have said: the sorted union of their lists, or null (any registry)
 * as soon as one of them has no allowlist.
 */
export function unionOfRegistries(entries: readonly BackendEntry[]): string[] | null {
  const union = new Set<string>();
  for (const e of entries) {
    if (e.status === "fenced" || e.status === "draining" || e.allowedRegistries === undefined) continue;
    if (e.allowedRegistries === null) return null;
    for (const r of e.allowedRegistries) union.add(r);
  }
  return [...union].sort();
}
