import { z } from "zod";
import { manifestDocumentSchema } from "./schema.ts";

/** Where clients can fetch the published schema; also its `$id`. */
export const MANIFEST_SCHEMA_ID = "https://fred.manifest.network/schemas/manifest.schema.json";

/**
 * The JSON Schema (draft 2020-12) for tenant manifests, generated from the same zod
 * schema the server parses with, so the two cannot disagree on fields, types, patterns
 * or limits. Rules a JSON Schema cannot express (port ranges, cleaned tmpfs paths,
 * depends_on targets and cycles) are only enforced by the server.
 */
export function manifestJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(manifestDocumentSchema, { io: "input", target: "draft-2020-12" });
  return { ...generated, $id: MANIFEST_SCHEMA_ID };
}

/** The committed file's exact text: two-space JSON with a trailing newline. */
export function manifestJsonSchemaText(): string {
  return `${JSON.stringify(manifestJsonSchema(), null, 2)}\n`;
}
