import type { BackendView, PlacementView, PlanInput, ProvisionObservation } from "./types.ts";

/** The one empty answer of every per-lease lookup (frozen: a caller cannot fill it for others). */
const NONE: readonly never[] = Object.freeze([]);

/** A raw positive that cannot be trusted, and whether it came from an answered backend (overlap). */
export interface UntrustedReport {
  backend: string;
  overlap: boolean;
}

/**
 * The sweep's backend evidence indexed by lease, built once per plan. "Trusted" means: from a
 * backend that answered both inventories, and not also listed as untrusted there.
 */
export class Evidence {
  /** Backends that answered both inventories, in configuration order. */
  readonly answered: readonly string[];
  /** Every configured backend answered. */
  readonly complete: boolean;
  readonly #views: ReadonlyMap<string, BackendView>;
  readonly #reporters = new Map<string, readonly string[]>();
  readonly #retainers = new Map<string, readonly string[]>();
  readonly #untrusted = new Map<string, UntrustedReport[]>();

  constructor(input: PlanInput) {
    this.#views = input.backends;
    const answered: string[] = [];
    for (const [name, view] of input.backends) {
      for (const lease of view.untrusted)
        push(this.#untrusted, lease, { backend: name, overlap: view.kind === "answered" });
      if (view.kind !== "answered") continue;
      answered.push(name);
      // Nearly every lease has one reporter: its list is this backend's one shared list.
      const alone: readonly string[] = Object.freeze([name]);
      for (const lease of view.provisions.keys())
        if (!view.untrusted.has(lease)) addBackend(this.#reporters, lease, name, alone);
      for (const lease of view.retentions)
        if (!view.untrusted.has(lease)) addBackend(this.#retainers, lease, name, alone);
    }
    this.answered = answered;
    this.complete = answered.length === input.backends.size;
  }

  configured(backend: string): boolean {
    return this.#views.has(backend);
  }

  answeredBy(backend: string): boolean {
    return this.#views.get(backend)?.kind === "answered";
  }

  /** The trusted /provisions row `backend` reported for `lease`. */
  observation(backend: string, lease: string): ProvisionObservation | undefined {
    const view = this.#views.get(backend);
    if (view?.kind !== "answered" || view.untrusted.has(lease)) return undefined;
    return view.provisions.get(lease);
  }

  /** Backends whose trusted /provisions list the lease. */
  reporters(lease: string): readonly string[] {
    return this.#reporters.get(lease) ?? NONE;
  }

  /** Backends whose trusted /retentions list the lease. */
  retainers(lease: string): readonly string[] {
    return this.#retainers.get(lease) ?? NONE;
  }

  untrusted(lease: string): readonly UntrustedReport[] {
    return this.#untrusted.get(lease) ?? NONE;
  }

  /**
   * Every lease some backend reported in any form (trusted provisions or retentions,
   * untrusted), once each and always in the same order, except those `skip` names: the
   * passes that walk this want no live lease, and those are nearly all of them.
   */
  *reportedLeases(skip: (lease: string) => boolean): Generator<string> {
    const seen = new Set<string>();
    for (const leases of [this.#reporters.keys(), this.#retainers.keys(), this.#untrusted.keys()]) {
      for (const lease of leases) {
        if (skip(lease) || seen.has(lease)) continue;
        seen.add(lease);
        yield lease;
      }
    }
  }
}

function addBackend(
  map: Map<string, readonly string[]>,
  lease: string,
  name: string,
  alone: readonly string[],
): void {
  const list = map.get(lease);
  map.set(lease, list === undefined ? alone : [...list, name]);
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** The backends a placement record names (owner, or every candidate). */
export function recordBackends(placement: PlacementView | undefined): readonly string[] {
  if (placement === undefined || placement.kind === "unusable") return [];
  return placement.kind === "confirmed" ? [placement.owner] : placement.candidates;
}

/** Sorted union of backend names. */
export function union(...lists: readonly (readonly string[])[]): string[] {
  // Most leases name one backend once: that needs no set and no sort (the plan runs per lease).
  let one: string | undefined;
  let names = 0;
  for (const list of lists) {
    names += list.length;
    if (list.length > 0) one = list[0];
  }
  if (names === 0) return [];
  if (names === 1) return [one as string];
  return [...new Set(lists.flat())].sort();
}
