import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, it } from "node:test";

/**
 * The barrel rule (docs/architecture.md): a folder under src/ that has an index.ts is a
 * module whose public surface is that file, so code outside the folder imports only its
 * index.ts. Biome cannot express this (its restricted-import rules see the import text,
 * not the resolved file), hence this check. Tests may reach inside modules; the devnet's
 * chain modules are exempt because their index.ts is the module itself.
 */
const SRC = resolve(new URL("../../src", import.meta.url).pathname);
const EXEMPT = [join(SRC, "devnet/modules")];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : [];
  });
}

const inside = (path: string, dir: string) => path.startsWith(`${dir}/`);
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.[^"']+)["']/gm;

describe("barrels", () => {
  const all = files(SRC);
  const barrels = all
    .filter((f) => f.endsWith("/index.ts"))
    .map(dirname)
    .filter((d) => !EXEMPT.some((e) => d === e || inside(d, e)));

  it("finds the modules it guards", () => {
    assert.ok(barrels.includes(join(SRC, "sqlite")), "src/sqlite/index.ts is a barrel");
    assert.ok(barrels.length >= 5, `barrels: ${barrels.map((b) => relative(SRC, b)).join(", ")}`);
  });

  it("nothing in src/ imports past a module's index.ts", () => {
    const bypasses: string[] = [];
    for (const file of all) {
      for (const m of readFileSync(file, "utf8").matchAll(SPECIFIER)) {
        const target = resolve(dirname(file), m[1] as string);
        assert.ok(existsSync(target), `${relative(SRC, file)} imports a missing file ${m[1]}`);
        for (const barrel of barrels) {
          if (inside(target, barrel) && !inside(file, barrel) && target !== join(barrel, "index.ts")) {
            bypasses.push(
              `${relative(SRC, file)} → ${relative(SRC, target)} (use ${relative(SRC, barrel)}/index.ts)`,
            );
          }
        }
      }
    }
    assert.deepEqual(bypasses, []);
  });
});
