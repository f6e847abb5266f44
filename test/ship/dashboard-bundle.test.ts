import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { DASHBOARD_WEB, packagedIndexHtml, writeDashboard } from "../../scripts/dashboard-bundle.mjs";

/**
 * The dashboard as the package ships it (lib/dashboard/, written by scripts/build-package.mjs
 * through writeDashboard): built here into a temporary directory, then read. The page must
 * name only files the build wrote, carry no import map, and load nothing from elsewhere.
 * The tarball's copy is checked in release.test.ts; the bundle runs in a browser in
 * test/provider/dashboard/page.test.ts.
 */
describe("the packaged dashboard", () => {
  const out = mkdtempSync(join(tmpdir(), "fred-dashboard-build-"));
  before(async () => {
    await writeDashboard(out);
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it("holds index.html, one app.js, one styles.css and the icon, nothing else", () => {
    assert.deepEqual(readdirSync(out).sort(), ["app.js", "favicon.svg", "index.html", "styles.css"]);
  });

  it("index.html references only files the build wrote, all under /assets/, and no import map", () => {
    const html = readFileSync(join(out, "index.html"), "utf8");
    const refs = [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]!);
    assert.deepEqual(refs.sort(), ["/assets/app.js", "/assets/favicon.svg", "/assets/styles.css"]);
    for (const ref of refs) assert.ok(existsSync(join(out, ref.slice("/assets/".length))), `${ref} exists`);
    assert.doesNotMatch(html, /importmap|\/assets\/vendor\/|<script(?![^>]*\bsrc=)/);
    assert.doesNotMatch(html, /\bstyle=/, "no inline style attribute (the CSP is style-src 'self')");
  });

  it("app.js has preact, htm and uPlot inside: no import left, no URL it would fetch", () => {
    const js = readFileSync(join(out, "app.js"), "utf8");
    assert.doesNotMatch(js, /\bimport\s*[{*\w"]|\bimport\(|\bfrom\s*"/, "an import survived the bundle");
    assert.match(js, /uPlot|u-legend/, "uPlot is bundled");
    assert.match(js, /fred-operator-token/, "the page's own code is bundled");
    assert.doesNotMatch(
      js,
      /https?:\/\/(?!github\.com\/|www\.w3\.org\/|preactjs\.com)/,
      "a URL other than XML namespaces and licence links",
    );
    assert.ok(js.length < 200_000, `app.js is ${js.length} bytes`);
  });

  it("styles.css holds uPlot's rules and ours", () => {
    const css = readFileSync(join(out, "styles.css"), "utf8");
    assert.match(css, /\.uplot\b/);
    assert.match(css, /\.u-legend\b/);
    assert.match(css, /:focus-visible/);
    assert.doesNotMatch(css, /@import|url\(\s*["']?https?:/);
  });

  it("the source index.html keeps its development block; the build refuses a page without one", () => {
    const source = readFileSync(join(DASHBOARD_WEB, "index.html"), "utf8");
    assert.match(source, /<script type="importmap">/);
    assert.throws(() => packagedIndexHtml(source.replace("<!-- dev:", "<!-- ")), /no <!-- dev:/);
  });
});
