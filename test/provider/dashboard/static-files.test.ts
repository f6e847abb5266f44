import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { findWebRoot, staticFile, type WebRoot } from "../../../src/provider/dashboard/static-files.ts";

/**
 * The page's files: `/` and `/assets/…` from the web root, the allowed libraries from
 * node_modules in development, and nothing else — no path outside its root, no other
 * package, no type outside the list.
 */
describe("dashboard static files", () => {
  const root = mkdtempSync(join(tmpdir(), "fred-dashboard-web-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const web = join(root, "src", "provider", "dashboard", "web");
  const modules = join(root, "node_modules");
  for (const dir of [web, join(web, "lib"), join(modules, "preact", "dist"), join(modules, "typescript")])
    mkdirSync(dir, { recursive: true });
  writeFileSync(join(web, "index.html"), "<html></html>");
  writeFileSync(join(web, "app.js"), "export {}");
  writeFileSync(join(web, "lib", "chart.css"), "body{}");
  writeFileSync(join(web, "secret.ts"), "no");
  writeFileSync(join(modules, "preact", "dist", "preact.mjs"), "export {}");
  writeFileSync(join(modules, "typescript", "x.js"), "no");
  writeFileSync(join(root, "package.json"), "{}");
  const source: WebRoot = { dir: web, modules, kind: "source" };

  it("picks the sources in a clone and lib/dashboard in a package", () => {
    assert.deepEqual(findWebRoot(root), source);
    const pkg = mkdtempSync(join(tmpdir(), "fred-dashboard-pkg-"));
    try {
      assert.deepEqual(findWebRoot(pkg), {
        dir: join(pkg, "lib", "dashboard"),
        modules: undefined,
        kind: "package",
      });
    } finally {
      rmSync(pkg, { recursive: true, force: true });
    }
  });

  it("serves the shell, assets and allowed libraries with their types", async () => {
    assert.equal((await staticFile(source, "/"))?.type, "text/html; charset=utf-8");
    assert.equal((await staticFile(source, "/assets/app.js"))?.body.toString(), "export {}");
    assert.equal((await staticFile(source, "/assets/lib/chart.css"))?.type, "text/css; charset=utf-8");
    assert.equal(
      (await staticFile(source, "/assets/vendor/preact/dist/preact.mjs"))?.body.toString(),
      "export {}",
    );
  });

  it("serves nothing outside its root, of another package, or of another type", async () => {
    for (const path of [
      "/index.html",
      "/package.json",
      "/assets/../../../../package.json",
      "/assets/%2e%2e/%2e%2e/%2e%2e/%2e%2e/package.json",
      "/assets/secret.ts",
      "/assets/missing.js",
      "/assets/vendor/typescript/x.js",
      "/assets/vendor/preact/../typescript/x.js",
      "/assets/vendor/preact/%2e%2e/typescript/x.js",
      "/assets/app.js%00.html",
      "/assets/%E0%A4%A",
      "/assets/lib",
    ]) {
      assert.equal(await staticFile(source, path), undefined, path);
    }
    assert.equal(
      await staticFile({ ...source, modules: undefined }, "/assets/vendor/preact/dist/preact.mjs"),
      undefined,
    );
  });
});
