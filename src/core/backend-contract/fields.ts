import { z } from "zod";
import { isCanonicalUuid, isUuidV4, NIL_UUID } from "../uuid.ts";

/**
 * Building blocks of the contract's schemas. Readers report the first problem only, in
 * the order the fields are declared, with a message that names the field as the caller
 * wrote it (`items[0].sku`), so the schemas below list fields in the order they are checked.
 */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** `items[0].sku` for the zod path ["items", 0, "sku"]. */
export function fieldName(path: readonly PropertyKey[]): string {
  let out = "";
  for (const token of path)
    out += typeof token === "number" ? `[${token}]` : `${out === "" ? "" : "."}${String(token)}`;
  return out;
}

/** Runs `schema` and keeps its first problem's message. */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown): Parsed<z.output<S>> {
  const result = schema.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, problem: result.error.issues[0]?.message ?? "invalid input" };
}

/** A problem message that names the field: `${field} ${text}`. */
export const at = (text: string) => (issue: { path?: PropertyKey[] | undefined }) =>
  `${fieldName(issue.path ?? [])} ${text}`;

/** A canonical lowercase UUID of any version (lease, SKU and provider UUIDs come from the chain). */
export const canonicalUuid = (text = "must be a canonical lowercase UUID") =>
  z.custom<string>(isCanonicalUuid, { error: at(text) });

/** A canonical lowercase v4 UUID (ids we mint: operations, storage identities). */
export const uuidV4 = (text = "must be a canonical lowercase UUIDv4") =>
  z.custom<string>(isUuidV4, { error: at(text) });

/** A lease-like UUID that says "is required" when absent, null or empty. */
export const requiredUuid = () =>
  z.custom<string>(isCanonicalUuid, {
    error: (issue) =>
      issue.input === undefined || issue.input === null || issue.input === ""
        ? at("is required")(issue)
        : at("must be a canonical lowercase UUID")(issue),
  });

/** A lease UUID: required, canonical lowercase, and never the nil UUID (no chain mints it). */
export const requiredLeaseUuid = () =>
  z.custom<string>((v) => isCanonicalUuid(v) && v !== NIL_UUID, {
    error: (issue) => {
      if (issue.input === undefined || issue.input === null || issue.input === "")
        return at("is required")(issue);
      if (issue.input === NIL_UUID) return at("must not be the nil UUID")(issue);
      return at("must be a canonical lowercase UUID")(issue);
    },
  });

/** A JSON object (not null, not an array), kept as it came. */
export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A field typed for whoever builds the body but not checked on its own: either a rule of
 * the enclosing schema checks it (so its problem comes in rule order), or readers relay it
 * without judging it.
 */
export const typedOnly = <T>() => z.custom<T>(() => true).optional();

/** A value that passes `check`, kept as it came (same object, same key order). */
export const relayed = <T>(check: z.ZodType) => z.custom<T>((v) => check.safeParse(v).success);
