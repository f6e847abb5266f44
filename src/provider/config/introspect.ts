import { z } from "zod";

/**
 * What the loader needs to know about each key of an object schema, read off the schema
 * itself (its JSON Schema, input side) so no second table of keys exists: the kind of
 * text a `PROVIDER_<KEY>` variable must hold, the default in file syntax (a key without
 * one must appear in the file before the environment may override it), and which keys
 * are durations (their config property gets the `Ms` suffix).
 */
export type FieldKind = "string" | "bool" | "int" | "number" | "duration" | "list" | "object";

export interface FieldInfo {
  kind: FieldKind;
  hasDefault: boolean;
  /** The default in file syntax; meaningful only when hasDefault. */
  default: unknown;
}

interface JsonProperty {
  type?: string;
  format?: string;
  anyOf?: JsonProperty[];
  enum?: unknown[];
  default?: unknown;
}

function kindOf(p: JsonProperty): FieldKind {
  const t = p.type ?? p.anyOf?.find((a) => a.type !== "null")?.type;
  if (t === "string") return p.format === "duration" ? "duration" : "string";
  if (t === "boolean") return "bool";
  if (t === "integer") return "int";
  if (t === "number") return "number";
  if (t === "array") return "list";
  return "object";
}

const cache = new WeakMap<z.ZodType, ReadonlyMap<string, FieldInfo>>();

export function fieldsOf(schema: z.ZodType): ReadonlyMap<string, FieldInfo> {
  let fields = cache.get(schema);
  if (fields === undefined) {
    const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as {
      properties?: Record<string, JsonProperty>;
    };
    fields = new Map(
      Object.entries(json.properties ?? {}).map(([key, p]) => [
        key,
        { kind: kindOf(p), hasDefault: "default" in p, default: p.default },
      ]),
    );
    cache.set(schema, fields);
  }
  return fields;
}

type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;

/** snake_case keys → camelCase properties; a duration `x` (Ms) becomes `xMs: number`. */
export type Camelized<T> = {
  readonly [K in keyof T & string as T[K] extends number & z.$brand<"Ms">
    ? `${Camel<K>}Ms`
    : Camel<K>]: T[K] extends number & z.$brand<"Ms">
    ? number
    : T[K] extends readonly (infer E)[]
      ? readonly E[]
      : T[K];
};

function camel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The runtime side of Camelized, for an object parsed by `schema`. */
export function camelize<T extends object>(schema: z.ZodType, value: T): Camelized<T> {
  const fields = fieldsOf(schema);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    out[fields.get(key)?.kind === "duration" ? `${camel(key)}Ms` : camel(key)] = v;
  }
  return out as Camelized<T>;
}
