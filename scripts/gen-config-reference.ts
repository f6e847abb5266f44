import { writeFileSync } from "node:fs";
import { renderConfigReference } from "./config-reference.ts";

/** `npm run docs:config`: rewrites docs/config-reference.md from the configuration schemas. */
writeFileSync(new URL("../docs/config-reference.md", import.meta.url), renderConfigReference());
process.stderr.write("wrote docs/config-reference.md\n");
