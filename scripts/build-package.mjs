#!/usr/bin/env node
// Builds what the npm package runs instead of the TypeScript sources: one esbuild bundle of
// src/ (with its lazily loaded chunks and source maps) in lib/, entry lib/fred.mjs, and the
// operator dashboard's page in lib/dashboard/ (scripts/dashboard-bundle.mjs). `npm pack`
// runs this first (the `prepack` script), so the tarball needs neither esbuild nor tsx.
// A clone keeps running src/ through bin/bundle.js; lib/ is only what a package ships.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeBundle } from "../bin/bundle.js";
import { writeDashboard } from "./dashboard-bundle.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const LIB = join(ROOT, "lib");

/** HEAD of the checkout being packed, or undefined outside git (an unpacked source tree). */
function headCommit() {
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8", stdio: "pipe" }).trim();
  } catch {
    return undefined;
  }
}

// A fresh directory: a chunk left from an earlier build would be packed, unused.
rmSync(LIB, { recursive: true, force: true });
const commit = headCommit();
await writeBundle("fred", LIB, {
  // An installed package has no .git to read: --version and /health report this commit.
  define: commit === undefined ? {} : { __FRED_BUILD_COMMIT__: JSON.stringify(commit) },
  logLevel: "warning",
});
if (!existsSync(join(LIB, "fred.mjs"))) throw new Error("esbuild wrote no lib/fred.mjs");
await writeDashboard(join(LIB, "dashboard"));
console.error(
  `build-package: lib/ holds ${readdirSync(LIB).length} files (entry lib/fred.mjs, commit ${commit ?? "unknown"})`,
);
