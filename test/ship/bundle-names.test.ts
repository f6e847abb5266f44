import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
// @ts-expect-error: a plain JavaScript module of the launcher, without types.
import { writeBundle } from "../../bin/bundle.js";
import { REPO_ROOT } from "../support/index.ts";

/**
 * The CLI's bundle is built without esbuild's keepNames (bin/bundle.js says why): a class
 * esbuild renamed to avoid a clash between modules would then carry its new name into
 * logs (pino writes an error's `type` from its constructor's name). This builds the bundle
 * the way `fred` does and checks that every class in it has a name declared in src/.
 */
const CLASS_IN_BUNDLE =
  /\bclass\s+([A-Za-z_$][\w$]*)|\b(?:var|let|const)\s+([A-Za-z_$][\w$]*)\s*=\s*class\b/g;
const CLASS_IN_SOURCE = /\bclass\s+([A-Za-z_$][\w$]*)/g;

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => readFileSync(join(dir, f), "utf8"));
}

describe("the CLI bundle", () => {
  const out = mkdtempSync(join(tmpdir(), "fred-bundle-names-"));
  after(() => rmSync(out, { recursive: true, force: true }));

  it("renames no class: every class in it is named as in src/", async () => {
    await writeBundle("names", out);
    const declared = new Set<string>();
    for (const text of sourcesUnder(join(REPO_ROOT, "src")))
      for (const m of text.matchAll(CLASS_IN_SOURCE)) declared.add(m[1]!);
    const bundled = new Set<string>();
    for (const f of readdirSync(out).filter((n) => n.endsWith(".mjs")))
      for (const m of readFileSync(join(out, f), "utf8").matchAll(CLASS_IN_BUNDLE))
        bundled.add((m[1] ?? m[2])!);
    assert.ok(bundled.size > 50, `the bundle's classes were found (${bundled.size})`);
    const renamed = [...bundled].filter((name) => !declared.has(name));
    assert.deepEqual(renamed, [], "classes the bundle names differently from src/");
  });
});
