import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { writeDashboard } from "../../../scripts/dashboard-bundle.mjs";
import { until } from "../../support/index.ts";
import {
  ARTIFACTS,
  browserSkip,
  column,
  countTables,
  focusVisible,
  launchBrowser,
  storedToken,
  tabTo,
  watch,
} from "./browser.ts";
import { startFixtureServer } from "./fixture-server.ts";
import { FIRST, FIXTURE, HOSTILE, LEASES, TENANT } from "./fixtures.ts";

/**
 * The dashboard page in headless chromium against a fixture of the read API (fixed data in
 * the contract's shapes, fixture-server.ts), twice: from source (modules and libraries through
 * the import map, as in development) and as the package ships it (the esbuild bundle that
 * scripts/dashboard-bundle.mjs writes). Both must render every page with no console error,
 * no CSP violation and no failed request, show tenant strings as text, and keep the token
 * as the contract says. The real listener and real data: dashboard-stack.test.ts.
 */
const skip = browserSkip();
const TOKEN = "fixture-operator-token-0123456789abcdef";

let browser: Browser;
before(async () => {
  if (!skip) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

for (const mode of ["source", "packaged"] as const) {
  describe(`the dashboard page (${mode})`, { skip }, () => {
    let server: Awaited<ReturnType<typeof startFixtureServer>>;
    let page: Page;
    let watcher: ReturnType<typeof watch>;
    let built = "";

    before(async () => {
      if (mode === "packaged") {
        built = mkdtempSync(join(tmpdir(), "fred-dashboard-"));
        await writeDashboard(built);
      }
      server = await startFixtureServer({
        token: TOKEN,
        data: FIXTURE,
        ...(mode === "packaged" ? { packagedDir: built } : {}),
      });
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      watcher = watch(page);
    });
    after(async () => {
      await page?.close();
      await server?.[Symbol.asyncDispose]();
      if (built !== "") rmSync(built, { recursive: true, force: true });
    });

    it("takes the token from #token=, keeps it in sessionStorage and drops it from the URL", async () => {
      await page.goto(`${server.url}/#token=${TOKEN}`);
      await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
      assert.equal(await storedToken(page), TOKEN);
      assert.equal(new URL(page.url()).hash, "#/");
      assert.ok(!page.url().includes(TOKEN));
    });

    it("the overview shows the counts, earnings, reconciler and alerts the API answered", async () => {
      await page.getByRole("table", { name: "On chain" }).waitFor();
      const tables = await countTables(page);
      const o = FIXTURE.overview as {
        leases: { chain: Record<string, number>; records: Record<string, number> };
      };
      assert.deepEqual(tables["On chain"], stringify(o.leases.chain));
      assert.deepEqual(tables["Placement records"], stringify(o.leases.records));
      assert.deepEqual(tables["Actions of the last sweep"], { noop: "58", reprovision: "1" });
      assert.deepEqual(await column(page, "By denom", "Withdrawn"), ["123,456,789 umfx", "—"]);
      assert.deepEqual(await column(page, "By denom", "Accrued"), ["4,200 umfx", "17 upwr"]);
      const alert = (await page.locator(".alerts li").textContent()) ?? "";
      assert.ok(alert.includes("FredBackendUnhealthy") && alert.includes(HOSTILE), alert);
      assert.equal(
        (await page.locator("canvas").count()) > 0,
        true,
        "the provisions-per-hour chart is drawn",
      );
      await page.screenshot({ path: join(ARTIFACTS, `fixture-${mode}-overview.png`), fullPage: true });
    });

    it("the fleet lists every backend with its state, breaker and resources", async () => {
      await page.getByRole("link", { name: "Fleet" }).click();
      await page.getByRole("table", { name: "Backends (2)" }).waitFor();
      assert.deepEqual(await column(page, "Backends", "Backend"), [
        "mock-a127.0.0.1:9001",
        "mock-b127.0.0.1:9002",
      ]);
      assert.deepEqual(await column(page, "Backends", "Health"), ["healthy", "unhealthy"]);
      assert.deepEqual(await column(page, "Backends", "Service"), ["in service", "draining"]);
      assert.deepEqual(await column(page, "Backends", "Breaker"), ["closed", "open"]);
      assert.deepEqual(await column(page, "Backends", "CPU"), ["6.5 of 8 cores", "—"]);
      assert.equal(await page.locator("meter").count(), 3);
      assert.equal(await page.getByRole("link", { name: "Fleet" }).getAttribute("aria-current"), "page");
      await page.screenshot({ path: join(ARTIFACTS, `fixture-${mode}-fleet.png`), fullPage: true });
    });

    it("the leases list pages with next_cursor and filters by state", async () => {
      await page.getByRole("link", { name: "Leases" }).click();
      await page.getByRole("table", { name: "Leases" }).waitFor();
      assert.equal((await column(page, "Leases", "Lease")).length, 50);
      await page.getByRole("link", { name: "Next page" }).click();
      await until(async () => (await column(page, "Leases (a later page)", "Lease")).length === 10, "page 2");
      await page.getByRole("link", { name: "First page" }).click();
      await page.getByLabel("State").selectOption("closed");
      await page.getByRole("button", { name: "Search" }).click();
      await until(async () => {
        const states = await column(page, "Leases", "State");
        return states.length === 5 && states.every((s) => s === "closed");
      }, "5 closed leases");
      assert.match(new URL(page.url()).hash, /^#\/leases\?state=closed$/);
    });

    it("a search by UUID prefix or tenant finds the lease, whose page shows its releases as text", async () => {
      await page.goto(`${server.url}/#/leases`);
      await page.getByLabel("Lease UUID or tenant address").fill(FIRST.slice(0, 8));
      await page.keyboard.press("Enter");
      await until(async () => (await column(page, "Leases", "Lease")).join() === FIRST, "the one lease");
      await page.getByLabel("Lease UUID or tenant address").fill(TENANT);
      await page.keyboard.press("Enter");
      const mine = LEASES.filter((l) => l.tenant === TENANT).length;
      await until(
        async () => (await column(page, "Leases", "Tenant")).length === Math.min(mine, 50),
        "tenant's",
      );
      await page.getByRole("link", { name: FIRST }).click();
      await page.getByRole("table", { name: "Releases, newest last" }).waitFor();
      assert.deepEqual(await column(page, "Releases", "Image"), ["docker.io/library/nginx:1.27", HOSTILE]);
      assert.deepEqual(await column(page, "Events", "Detail"), [`ready ${HOSTILE}`]);
      // Markup from a tenant is text: no element was made from it and its handler never ran.
      assert.equal(await page.locator("main img").count(), 0);
      assert.equal(await page.evaluate("document.body.dataset.owned ?? null"), null);
      assert.ok(((await page.locator("#diag-h + dl").textContent()) ?? "").includes(HOSTILE));
      assert.deepEqual(await column(page, "Last sample per instance", "Memory"), ["128 MiB of 512 MiB"]);
      assert.deepEqual(await column(page, "Last sample per instance", "Disk"), ["—"]);
      await page.screenshot({ path: join(ARTIFACTS, `fixture-${mode}-lease.png`), fullPage: true });
    });

    it("an unknown lease says so", async () => {
      await watcher.excusing([/HTTP 404: GET .*\/api\/leases\/ffffffff-/, /status of 404/], async () => {
        await page.goto(`${server.url}/#/leases/ffffffff-aaaa-4bbb-8ccc-dddddddddddd`);
        await page.getByText("No such lease on this provider.").waitFor();
      });
    });

    it("the charts page draws the series for the chosen window", async () => {
      await page.getByRole("link", { name: "Charts" }).click();
      await until(async () => (await page.locator("canvas").count()) === 5, "5 charts");
      await page.getByLabel("6h").check();
      await until(() => server.apiCalls.includes("/api/series?window=6h"), "a 6h series read");
      assert.match((await page.locator(".chart-latest").first().textContent()) ?? "", /^Latest: leases \d+$/);
      await page.screenshot({ path: join(ARTIFACTS, `fixture-${mode}-charts.png`), fullPage: true });
    });

    it("is keyboard-usable: Tab reaches the nav links and the search box, with a visible focus", async () => {
      await page.goto(`${server.url}/#/leases`);
      await page.getByRole("table", { name: "Leases" }).waitFor();
      // A fresh load, so Tab starts from the top; once the page's reads are done, so the
      // reload cancels none of them.
      await page.waitForLoadState("networkidle");
      await page.reload();
      await page.getByRole("table", { name: "Leases" }).waitFor();
      assert.match((await tabTo(page, 'nav a[href="#/fleet"]')) ?? "", /Fleet/);
      assert.equal(await focusVisible(page), true, "the nav link shows its focus");
      assert.ok(await tabTo(page, "#lease-q"), "Tab reaches the search box");
      assert.equal(await focusVisible(page), true, "the search box shows its focus");
    });

    it("Refresh now reads again; auto-refresh can be paused", async () => {
      await page.goto(`${server.url}/#/`);
      await page.getByRole("table", { name: "On chain" }).waitFor();
      const before = server.apiCalls.filter((c) => c === "/api/overview").length;
      await page.getByRole("button", { name: "Refresh now" }).click();
      await until(() => server.apiCalls.filter((c) => c === "/api/overview").length > before, "a new read");
      const toggle = page.getByRole("button", { name: /Auto-refresh/ });
      assert.equal(await toggle.getAttribute("aria-pressed"), "true");
      await toggle.click();
      assert.equal(await toggle.getAttribute("aria-pressed"), "false");
      assert.equal((await toggle.textContent())?.trim(), "Auto-refresh paused");
    });

    it("had no console error, CSP violation or failed request on any page", () => {
      assert.deepEqual(watcher.problems, []);
    });

    it("without a token shows the token form and reads nothing; a refused token is forgotten", async () => {
      const fresh = await browser.newPage();
      const w = watch(fresh);
      try {
        const calls = server.apiCalls.length;
        await fresh.goto(`${server.url}/#/fleet`);
        await fresh.getByRole("heading", { name: "Operator token needed" }).waitFor();
        assert.equal(await fresh.locator("table").count(), 0);
        assert.equal(await fresh.getByRole("navigation").count(), 0);
        assert.equal(server.apiCalls.length, calls, "no API read without a token");

        // A wrong token: the API refuses it (401), the page forgets it and asks again.
        await w.excusing([/HTTP 401: GET .*\/api\/fleet$/, /status of 401/], async () => {
          await fresh.getByLabel("Operator token", { exact: true }).fill("wrong-token");
          await fresh.getByRole("button", { name: "Open the dashboard" }).click();
          await fresh.getByRole("heading", { name: "Operator token needed" }).waitFor();
          await until(async () => (await storedToken(fresh)) === null, "the refused token forgotten");
        });
        assert.equal(await fresh.locator("table").count(), 0);

        await fresh.getByLabel("Operator token", { exact: true }).fill(TOKEN);
        await fresh.getByRole("button", { name: "Open the dashboard" }).click();
        await fresh.getByRole("table", { name: "Backends (2)" }).waitFor();
        assert.deepEqual(w.problems, []);
      } finally {
        await fresh.close();
      }
    });
  });
}

function stringify(counts: Record<string, number>): Record<string, string> {
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, String(v)]));
}
