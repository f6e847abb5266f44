import { z } from "zod";
import { isStrongSecret, MIN_SECRET_BYTES } from "../../auth/hmac.ts";
import { parseConfigDuration } from "../../core/duration.ts";

/**
 * The value kinds of providerd's config, as zod field schemas. A message is a predicate
 * ("must be a string"); the loader puts the key's path in front of it
 * ("backends[1].timeout must be greater than zero"). Defaults are given in file syntax
 * (`prefault`), so they run through the same rules as a value the operator wrote and the
 * schema can list them (see introspect.ts).
 */

/** A duration in milliseconds: the mark that renames `timeout` to `timeoutMs`. */
export type Ms = number & z.$brand<"Ms">;

const expected =
  (what: string, missing = "is required") =>
  (issue: { input: unknown }) =>
    issue.input === undefined ? missing : what;

export const text = () => z.string({ error: expected("must be a string") });

/** A string that must be present and not empty; `hint` follows "is required". */
export const required = (hint = "") =>
  z.string({ error: expected("must be a string", `is required${hint}`) }).min(1, `is required${hint}`);

/** A string with no default (so `PROVIDER_<KEY>` needs it in the file); absent reads as "". */
export const optionalText = () =>
  text()
    .optional()
    .transform((v) => v ?? "");

/** A file path with no default; absent or "" reads as undefined. */
export const optionalPath = () =>
  text()
    .optional()
    .transform((v) => (v === undefined || v === "" ? undefined : v));

export const bool = () => z.boolean({ error: expected("must be true or false") });
export const int = () => z.int({ error: expected("must be an integer") });
export const num = () => z.number({ error: expected("must be a number") });

/** One of `values`; a value of `refused` (one the reference takes) gets its own message. */
export const oneOf = <const T extends readonly [string, ...string[]]>(
  values: T,
  refused: Readonly<Record<string, string>> = {},
) =>
  z.enum(values, {
    error: (issue: { input: unknown }) =>
      (typeof issue.input === "string" && Object.hasOwn(refused, issue.input)
        ? refused[issue.input]
        : undefined) ?? expected(`must be one of ${values.join(", ")}`)(issue),
  });

/** A YAML list of strings; `null` (an empty `key:`) reads as []. */
export const list = (item: z.ZodType<string> = text()) =>
  z
    .array(item, { error: expected("must be a list of strings") })
    .nullable()
    .transform((v) => v ?? []);

/** A list with no default (so `PROVIDER_<KEY>` needs it in the file); absent reads as []. */
export const optionalList = (item: z.ZodType<string> = text()) =>
  list(item)
    .optional()
    .transform((v) => v ?? []);

/** Go duration text ("500ms", "30s", "5m", "1h30m") → milliseconds; never negative. */
export const duration = () =>
  z
    .string({ error: expected('must be a duration string such as "30s"') })
    .meta({ format: "duration" })
    .transform((value, ctx) => {
      const d = parseConfigDuration(value);
      if (d.ok) return d.ms as Ms;
      ctx.addIssue({ code: "custom", message: durationProblem(d.problem, value) });
      return z.NEVER;
    });

export const positiveDuration = () => duration().refine((ms) => ms > 0, "must be greater than zero");

/** The wording of a bad duration, shared with the `PROVIDER_<KEY>` decoder. */
export function durationProblem(problem: "invalid" | "negative", value: string): string {
  return problem === "negative"
    ? "must not be negative"
    : `is not a valid duration: ${JSON.stringify(value)} (use forms like "500ms", "30s", "5m", "1h")`;
}

/** An HMAC key: "" (not set) or at least MIN_SECRET_BYTES bytes. */
export const secret = <T extends z.ZodType<string>>(base: T) =>
  base.refine((s) => s === "" || isStrongSecret(s), `must be at least ${MIN_SECRET_BYTES} bytes`);
