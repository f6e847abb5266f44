import assert from "node:assert/strict";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { REPO_ROOT, runFred, until } from "../../support/index.ts";
import { mockSkus, Stack } from "../e2e/stack.ts";
import { ARTIFACTS, browserSkip, column, countTables, launchBrowser, tabTo, watch } from "./browser.ts";

/**
 * The operator dashboard in headless chromium against a real stack: a devnet, two mock
 * backends and providerd as processes, with leases on both backends (two deployed through
 * `fred lease deploy`, so they have releases; two created bare, one of them closed). What
 * the page shows is checked against independent reads: the chain through the tenant's
 * client, the placement store through `fred placement inspect`. Screenshots of every page go
 * to test-artifacts/dashboard/; with UPDATE_DOCS_SCREENSHOTS=1 the overview and fleet ones
 * are also written to docs/images/ for the operator guide.
 */
const skip = browserSkip();
const MANIFEST = { image: "docker.io/library/nginx:1.27", ports: { "80/tcp": {} } };

const stack = new Stack();
let dashboard = "";
let token = "";
let browser: Browser;
let page: Page;
let watcher: ReturnType<typeof watch>;
/** The deployed leases, by backend: [mock-1's, mock-2's]. */
const deployed: string[] = [];
let closed = "";

async function fredJson(args: string[]): Promise<Record<string, unknown>> {
  const r = await runFred(args);
  assert.equal(r.code, 0, `fred ${args.slice(0, 3).join(" ")}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
}

const tenantFlags = () => [
  "--from",
  "tenant1",
  "--home",
  join(stack.dir, "devnet"),
  "--rpc",
  stack.devnet.rpc,
  "--provider-url",
  stack.api,
];

describe("the operator dashboard against a real stack", { skip }, () => {
  before(async () => {
    await stack.start(
      (s) => [
        { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")) },
        { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-medium")) },
      ],
      (s) => {
        s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-medium")] }];
      },
    );
    // Short memo of the chain's counts, so a refresh shows a change within a second.
    await stack.startProviderd({ FRED_DASHBOARD_SAMPLE_MS: "500", FRED_DASHBOARD_CHAIN_TTL_MS: "200" });
    dashboard = stack.operator;
    // providerd made the token file (0600) beside its stores, as `fred up` does.
    token = readFileSync(join(dirname(stack.placementPath), "operator-token"), "utf8").trim();

    const manifest = join(stack.dir, "app.json");
    writeFileSync(manifest, JSON.stringify(MANIFEST));
    for (const sku of ["docker-small", "docker-medium"]) {
      const r = await fredJson(["lease", "deploy", "--sku", sku, "--manifest", manifest, ...tenantFlags()]);
      assert.equal(r.state, "LEASE_STATE_ACTIVE");
      deployed.push(String(r.lease_uuid));
    }
    const bare = await stack.createLeases(2, "docker-small");
    await stack.waitState(bare, "LEASE_STATE_ACTIVE");
    closed = bare[1]!;
    await fredJson(["lease", "close", closed, ...tenantFlags()]);
    await stack.waitState([closed], "LEASE_STATE_CLOSED");

    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    watcher = watch(page);
  });

  after(async () => {
    await browser?.close();
    await stack.close();
  });

  it("without the token every /api/ route answers 401 with no data, and the page shows only the token form", async () => {
    for (const path of [
      "/api/overview",
      "/api/fleet",
      "/api/leases",
      `/api/leases/${deployed[0]}`,
      "/api/series?window=1h",
    ]) {
      for (const auth of [undefined, "Bearer wrong-token", `Basic ${token}`]) {
        const res = await fetch(
          `${dashboard}${path}`,
          auth === undefined ? {} : { headers: { authorization: auth } },
        );
        assert.equal(res.status, 401, `${path} with ${auth ?? "no"} authorization`);
        assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);
        const body = (await res.json()) as Record<string, unknown>;
        assert.equal(body.error, "unauthorized");
        assert.ok(!JSON.stringify(body).includes(deployed[0]!), "no lease in a 401 body");
      }
    }
    const fresh = await browser.newPage();
    const w = watch(fresh);
    try {
      await fresh.goto(`${dashboard}/#/fleet`);
      await fresh.getByRole("heading", { name: "Operator token needed" }).waitFor();
      assert.equal(await fresh.locator("table").count(), 0);
      assert.equal(await fresh.getByRole("navigation").count(), 0);
      assert.deepEqual(w.problems, []);
    } finally {
      await fresh.close();
    }
  });

  it("the overview's lease counts equal the chain's and the placement store's", async () => {
    await page.goto(`${dashboard}/#token=${token}`);
    await page.getByRole("table", { name: "On chain" }).waitFor();
    assert.ok(!page.url().includes(token), "the token left the address bar");

    const chain = await chainCounts();
    const records = await recordCounts();
    assert.equal(chain.active, 3, JSON.stringify(chain));
    assert.equal(chain.closed, 1, JSON.stringify(chain));
    // The page refreshes on its own every 10 s; "Refresh now" only saves the wait.
    let shown: Record<string, Record<string, string>> = {};
    await until(
      async () => {
        shown = await countTables(page);
        const onChain = Object.entries(shown["On chain"] ?? {});
        const sameChain = onChain.length > 0 && onChain.every(([k, v]) => Number(v) === (chain[k] ?? 0));
        const sameRecords =
          Number(shown["Placement records"]?.confirmed) === records.confirmed &&
          Number(shown["Placement records"]?.conflicts) === records.conflicts &&
          Number(shown["Placement records"]?.provisioning) === records.provisioning;
        if (sameChain && sameRecords) return true;
        await page.getByRole("button", { name: "Refresh now" }).click();
        return false;
      },
      "the overview's counts to match the chain and the placement store",
      { timeoutMs: 60_000, intervalMs: 500, context: () => JSON.stringify({ shown, chain, records }) },
    );
    assert.deepEqual(Object.keys(shown["On chain"]!).sort(), [
      "active",
      "closed",
      "expired",
      "pending",
      "rejected",
    ]);
    await shot("overview");
  });

  it("the fleet page lists both backends, healthy, with their leases", async () => {
    await page.getByRole("link", { name: "Fleet" }).click();
    await page.getByRole("table", { name: "Backends (2)" }).waitFor();
    const names = await column(page, "Backends", "Backend");
    assert.equal(names.length, 2);
    assert.ok(names[0]!.startsWith("mock-1") && names[1]!.startsWith("mock-2"), names.join());
    assert.deepEqual(await column(page, "Backends", "Health"), ["healthy", "healthy"]);
    assert.deepEqual(await column(page, "Backends", "Service"), ["in service", "in service"]);
    const leases = (await column(page, "Backends", "Leases")).map(Number);
    assert.ok(leases[0]! >= 2 && leases[1]! >= 1, `leases per backend: ${leases.join()}`);
    await shot("fleet");
  });

  it("a lease search finds the lease, and its page shows its placement and releases", async () => {
    await page.getByRole("link", { name: "Leases" }).click();
    await page.getByRole("table", { name: "Leases" }).waitFor();
    const [, onTwo] = deployed;
    await page.getByLabel("Lease UUID or tenant address").fill(onTwo!);
    await page.keyboard.press("Enter");
    await until(
      async () => (await column(page, "Leases", "Lease")).join() === onTwo,
      "the search to find the lease",
    );
    assert.deepEqual(await column(page, "Leases", "Backend"), ["mock-2"]);
    assert.deepEqual(await column(page, "Leases", "State"), ["active"]);

    await page.getByLabel("Lease UUID or tenant address").fill(stack.tenant.address);
    await page.keyboard.press("Enter");
    await until(async () => (await column(page, "Leases", "Lease")).length === 4, "the tenant's 4 leases");
    await shot("leases");

    await page.getByRole("link", { name: onTwo! }).click();
    await page.getByRole("table", { name: "Releases, newest last" }).waitFor();
    assert.deepEqual(await column(page, "Releases", "Image"), [MANIFEST.image]);
    const placement = (await page.locator("#placement-h + dl").textContent()) ?? "";
    assert.match(placement, /mock-2/);
    await shot("lease");
  });

  it("the charts page loads its series", async () => {
    await page.getByRole("link", { name: "Charts" }).click();
    await page.getByText("Provision latency", { exact: true }).waitFor();
    assert.equal(await page.locator("figure.chart").count(), 5);
    await shot("charts");
  });

  it("is keyboard-usable: Tab reaches the nav links and the search box", async () => {
    await page.goto(`${dashboard}/#/leases`);
    await page.getByRole("table", { name: "Leases" }).waitFor();
    // A fresh load, so Tab starts from the top; once the page's reads are done, so the
    // reload cancels none of them.
    await page.waitForLoadState("networkidle");
    await page.reload();
    await page.getByRole("table", { name: "Leases" }).waitFor();
    assert.ok(await tabTo(page, 'nav a[href="#/"]'), "Tab reaches the Overview link");
    assert.ok(await tabTo(page, 'nav a[href="#/fleet"]'), "Tab reaches the Fleet link");
    assert.ok(await tabTo(page, "#lease-q"), "Tab reaches the search box");
  });

  it("no page had a console error, a CSP violation or a failed request", () => {
    assert.deepEqual(watcher.problems, []);
  });
});

/** This provider's leases on chain, counted by state (active, closed, …), read through the tenant's client. */
async function chainCounts(): Promise<Record<string, number>> {
  const leases = await stack.tenant.leasesByProvider(stack.keys.provider_uuid, undefined);
  const counts: Record<string, number> = {};
  for (const l of leases) {
    const state = String(l.state)
      .replace(/^LEASE_STATE_/, "")
      .toLowerCase();
    counts[state] = (counts[state] ?? 0) + 1;
  }
  return counts;
}

/** The placement store's records, read by `fred placement inspect` (offline, read-only). */
async function recordCounts(): Promise<{ confirmed: number; conflicts: number; provisioning: number }> {
  const r = await runFred(["placement", "inspect", "--config", stack.configPath]);
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as { placements: { state: string }[]; attempts: unknown[] };
  return {
    confirmed: doc.placements.filter((p) => p.state === "confirmed").length,
    conflicts: doc.placements.filter((p) => p.state === "conflict").length,
    provisioning: doc.attempts.length,
  };
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  if (process.env.UPDATE_DOCS_SCREENSHOTS === "1" && (name === "overview" || name === "fleet")) {
    const dir = join(REPO_ROOT, "docs", "images");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `dashboard-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    // The docs keep small pictures: a bigger one means the page grew, and the docs should look.
    assert.ok(statSync(file).size < 200_000, `${file} is ${statSync(file).size} bytes`);
  }
}
