import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { DASHBOARD_WEB } from "../../../scripts/dashboard-bundle.mjs";

/**
 * The page's pure modules (routing, token extraction, number and time formatting, series
 * alignment), run in Node. They are plain browser JavaScript, so they are imported by path
 * and typed here by what the tests use.
 */
interface Route {
  page: string;
  params: Record<string, string>;
}
const route = (await import(pathToFileURL(join(DASHBOARD_WEB, "route.js")).href)) as {
  parseRoute(hash: string): Route;
  leasesHash(params: Record<string, string | undefined>): string;
  leasesApiPath(params: Record<string, string | undefined>, limit?: number): string;
  tokenFromHash(hash: string): string | undefined;
};
const format = (await import(pathToFileURL(join(DASHBOARD_WEB, "format.js")).href)) as {
  formatAmount(coin: { denom: string; amount: string } | null): string;
  formatBytes(n: number | null): string;
  formatNumber(n: number | null): string;
  formatTime(iso: string | null, now?: number): string;
  alignSeries(list: [number, number][][]): (number | null)[][];
};

const UUID = "0b9a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";

describe("dashboard routes", () => {
  it("maps each hash to its page, and anything else to notfound", () => {
    assert.deepEqual(route.parseRoute(""), { page: "overview", params: {} });
    assert.deepEqual(route.parseRoute("#/"), { page: "overview", params: {} });
    assert.deepEqual(route.parseRoute("#/fleet/"), { page: "fleet", params: {} });
    assert.deepEqual(route.parseRoute(`#/leases/${UUID.toUpperCase()}`), {
      page: "lease",
      params: { uuid: UUID },
    });
    assert.deepEqual(route.parseRoute("#/leases/not-a-uuid"), { page: "notfound", params: {} });
    assert.deepEqual(route.parseRoute("#/leases/%E0%A4%A"), { page: "notfound", params: {} });
    assert.deepEqual(route.parseRoute("#/nowhere"), { page: "notfound", params: {} });
    assert.deepEqual(route.parseRoute("#/charts?window=6h"), { page: "charts", params: { window: "6h" } });
    assert.deepEqual(route.parseRoute("#/charts?window=7d"), { page: "charts", params: { window: "24h" } });
  });

  it("keeps the lease filters in the hash and passes them to /api/leases, empty ones left out", () => {
    const r = route.parseRoute("#/leases?q=%20manifest1abc%20&state=active&backend=&sku=x&cursor=c1&other=1");
    assert.deepEqual(r, {
      page: "leases",
      params: { q: "manifest1abc", state: "active", sku: "x", cursor: "c1" },
    });
    assert.equal(route.leasesHash(r.params), "#/leases?q=manifest1abc&state=active&sku=x&cursor=c1");
    assert.equal(route.leasesHash({}), "#/leases");
    assert.equal(route.leasesApiPath({ q: "a&b", state: "" }), "/api/leases?q=a%26b&limit=50");
  });

  it("finds the token only in a #token= hash", () => {
    assert.equal(route.tokenFromHash("#token=abc123"), "abc123");
    assert.equal(route.tokenFromHash("#token=a%2Bb"), "a+b");
    assert.equal(route.tokenFromHash("#token="), undefined);
    assert.equal(route.tokenFromHash("#/fleet"), undefined);
    assert.equal(route.tokenFromHash("#/leases?token=abc"), undefined);
  });
});

describe("dashboard formatting", () => {
  it("shows amounts as exact integers with their denom, and unknowns as a dash", () => {
    assert.equal(
      format.formatAmount({ denom: "umfx", amount: "123456789012345678901" }),
      "123,456,789,012,345,678,901 umfx",
    );
    assert.equal(format.formatAmount({ denom: "umfx", amount: "1.5" }), "1.5 umfx");
    assert.equal(format.formatAmount(null), "—");
    assert.equal(format.formatNumber(null), "—");
    assert.equal(format.formatNumber(6.5), "6.5");
    assert.equal(format.formatNumber(1234), "1,234");
    assert.equal(format.formatBytes(32 * 2 ** 30), "32 GiB");
    assert.equal(format.formatBytes(1536), "1.5 KiB");
    assert.equal(format.formatBytes(null), "—");
  });

  it("shows times in UTC with how long ago", () => {
    const now = Date.parse("2026-12-05T12:00:00Z");
    assert.equal(
      format.formatTime("2026-12-05T11:57:00.000Z", now),
      "2026-12-05 11:57:00 UTC (3 min 0 s ago)",
    );
    assert.equal(format.formatTime(null, now), "—");
    assert.equal(format.formatTime("yesterday", now), "yesterday");
  });

  it("aligns series with different times for uPlot, null where one has no sample", () => {
    assert.deepEqual(
      format.alignSeries([
        [
          [10, 1],
          [20, 2],
        ],
        [
          [20, 5],
          [30, 6],
        ],
      ]),
      [
        [10, 20, 30],
        [1, 2, null],
        [null, 5, 6],
      ],
    );
    assert.deepEqual(format.alignSeries([]), [[]]);
  });
});
