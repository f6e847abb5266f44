/** Only the keys of `T` whose value is not undefined. */
type Defined<T> = { [K in keyof T]-?: Exclude<T[K], undefined> };

/**
 * `{ ...defaults, ...overrides }` where an `undefined` in `overrides` keeps the default:
 * the one replacement for `...(x === undefined ? {} : { x })` spreads under
 * `exactOptionalPropertyTypes`.
 */
export function withDefaults<T extends object>(
  defaults: Defined<T>,
  overrides: Partial<T> | undefined,
): Defined<T> {
  const out = { ...defaults } as Record<string, unknown>;
  if (overrides !== undefined) {
    for (const [k, v] of Object.entries(overrides)) if (v !== undefined) out[k] = v;
  }
  return out as Defined<T>;
}

/** Copies `obj` without its undefined-valued keys (for optional options objects). */
export function definedOnly<T extends object>(obj: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) out[k] = v;
  return out as { [K in keyof T]: Exclude<T[K], undefined> };
}
