// Writes schemas/manifest.schema.json from the zod manifest schema (`npm run schema`).
// A test compares the committed file with a fresh generation, so run this after any
// change to src/core/manifest and commit the result.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { manifestJsonSchemaText } from "../src/core/manifest/json-schema.ts";

const target = fileURLToPath(new URL("../schemas/manifest.schema.json", import.meta.url));
writeFileSync(target, manifestJsonSchemaText());
process.stderr.write(`wrote ${target}\n`);
