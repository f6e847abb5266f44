/**
 * A module's view of state: its own key namespace over a RawKV, with every access charged to
 * the gas meter using the Cosmos SDK's default KV gas table.
 */
import type { GasMeter, KVRange, KVStore } from "../module.ts";
import type { RawKV } from "./raw-kv.ts";

export const KV_GAS = {
  hasCost: 1000,
  deleteCost: 1000,
  readCostFlat: 1000,
  readCostPerByte: 3,
  writeCostFlat: 2000,
  writeCostPerByte: 30,
  iterNextCostFlat: 30,
} as const;

/** The smallest string greater than every string starting with `prefix`. */
export function prefixEnd(prefix: string): string | undefined {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const c = prefix.charCodeAt(i);
    if (c < 0xffff) return prefix.slice(0, i) + String.fromCharCode(c + 1);
  }
  return undefined;
}

export class ModuleStore implements KVStore {
  readonly #raw: RawKV;
  readonly #ns: string;
  readonly #gas: GasMeter;

  constructor(raw: RawKV, moduleName: string, gas: GasMeter) {
    this.#raw = raw;
    this.#ns = `${moduleName}/`;
    this.#gas = gas;
  }

  get(key: string): Uint8Array | undefined {
    this.#gas.consume(KV_GAS.readCostFlat, "ReadFlat");
    const value = this.#raw.get(this.#ns + key);
    this.#gas.consume(KV_GAS.readCostPerByte * (key.length + (value?.length ?? 0)), "ReadPerByte");
    return value;
  }

  has(key: string): boolean {
    this.#gas.consume(KV_GAS.hasCost, "Has");
    return this.#raw.get(this.#ns + key) !== undefined;
  }

  set(key: string, value: Uint8Array): void {
    this.#gas.consume(KV_GAS.writeCostFlat, "WriteFlat");
    this.#gas.consume(KV_GAS.writeCostPerByte * (key.length + value.length), "WritePerByte");
    this.#raw.set(this.#ns + key, value);
  }

  delete(key: string): void {
    this.#gas.consume(KV_GAS.deleteCost, "Delete");
    this.#raw.delete(this.#ns + key);
  }

  *iterate(range: KVRange = {}): IterableIterator<[string, Uint8Array]> {
    const ns = this.#ns;
    const prefix = ns + (range.prefix ?? "");
    let lo = prefix;
    if (range.start !== undefined && ns + range.start > lo) lo = ns + range.start;
    let hi = prefixEnd(prefix);
    if (range.end !== undefined && (hi === undefined || ns + range.end < hi)) hi = ns + range.end;
    if (hi !== undefined && lo >= hi) return;
    let n = 0;
    for (const [key, value] of this.#raw.iterate(lo, hi, range.reverse ?? false)) {
      if (range.limit !== undefined && n >= range.limit) return;
      n++;
      this.#gas.consume(KV_GAS.iterNextCostFlat, "IterNextFlat");
      this.#gas.consume(KV_GAS.readCostPerByte * (key.length - ns.length + value.length), "ValuePerByte");
      yield [key.slice(ns.length), value];
    }
  }
}
