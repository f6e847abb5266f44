import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import type { InstanceUsageBody, LeaseUsageRow } from "../../../src/core/backend-contract/index.ts";
import { LeaseUsageSeries } from "../../../src/provider/usage-metrics/index.ts";
import { PROMTOOL_SKIP, promtoolMetricsProblems } from "../../support/promtool.ts";

/**
 * providerd's per-lease usage series: values and labels from the backends' readings, gone
 * with the lease, the series cap (instances already exported are kept, new ones left out
 * and counted), one forgiven failure per backend, and promtool-clean exposition.
 */
const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

function instance(service: string, index: number, over: Partial<InstanceUsageBody> = {}): InstanceUsageBody {
  return {
    service,
    instance: index,
    sampled_at: "2026-12-05T12:00:00.000Z",
    cpu_cores: 0.25,
    cpu_limit_cores: 0.5,
    cpu_throttled_seconds: 1.5,
    memory_bytes: 1000,
    memory_limit_bytes: 4000,
    network_rx_bytes: 10,
    network_tx_bytes: 20,
    disk_bytes: 300,
    disk_quota_bytes: 900,
    restarts: 0,
    started_at: "2026-12-05T11:00:00.000Z",
    uptime_seconds: 3600,
    ...over,
  };
}

const lease = (n: number, ...instances: InstanceUsageBody[]): LeaseUsageRow => ({
  lease_uuid: uuid(n),
  instances: instances.length === 0 ? [instance("app", 0)] : instances,
});

async function scrape(registry: Registry): Promise<string> {
  return registry.metrics();
}

/** `name{labels} value` lines of one metric. */
function lines(text: string, name: string): string[] {
  return text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

const leasesIn = (text: string) =>
  new Set([...text.matchAll(/fred_lease_memory_bytes\{lease_uuid="([^"]+)"/g)].map((m) => m[1]));

describe("lease usage series", () => {
  it("exports each instance's figures with lease_uuid, service and instance labels only", async () => {
    const registry = new Registry();
    const series = new LeaseUsageSeries(registry);
    series.replace("mock-1", [
      lease(1, instance("web", 0), instance("web", 1, { disk_bytes: null, disk_quota_bytes: null })),
    ]);
    const text = await scrape(registry);
    const l = `lease_uuid="${uuid(1)}",service="web",instance="0"`;
    assert.ok(text.includes(`fred_lease_cpu_cores{${l}} 0.25`), text);
    assert.ok(text.includes(`fred_lease_cpu_throttled_seconds_total{${l}} 1.5`));
    assert.ok(text.includes(`fred_lease_memory_bytes{${l}} 1000`));
    assert.ok(text.includes(`fred_lease_memory_limit_bytes{${l}} 4000`));
    assert.ok(text.includes(`fred_lease_network_receive_bytes_total{${l}} 10`));
    assert.ok(text.includes(`fred_lease_network_transmit_bytes_total{${l}} 20`));
    assert.ok(text.includes(`fred_lease_disk_bytes{${l}} 300`));
    assert.ok(text.includes(`fred_lease_disk_quota_bytes{${l}} 900`));
    assert.match(text, /# TYPE fred_lease_cpu_throttled_seconds_total counter/);
    assert.match(text, /# TYPE fred_lease_memory_bytes gauge/);
    assert.equal(lines(text, "fred_lease_memory_bytes").length, 2);
    assert.equal(lines(text, "fred_lease_disk_bytes").length, 1, "no volume: no disk series");
    assert.ok(text.includes("fred_lease_usage_series_left_out 0"));
  });

  it("drops a lease's series once a reading no longer reports it", async () => {
    const registry = new Registry();
    const series = new LeaseUsageSeries(registry);
    series.replace("mock-1", [lease(1), lease(2)]);
    series.replace("mock-2", [lease(3)]);
    assert.deepEqual(leasesIn(await scrape(registry)), new Set([uuid(1), uuid(2), uuid(3)]));
    series.replace("mock-1", [lease(2)]);
    assert.deepEqual(leasesIn(await scrape(registry)), new Set([uuid(2), uuid(3)]));
  });

  it("keeps a failed backend's series for one more pass, then drops them; a drop is at once", async () => {
    const registry = new Registry();
    const series = new LeaseUsageSeries(registry);
    series.replace("mock-1", [lease(1)]);
    series.replace("mock-2", [lease(2)]);
    series.failed("mock-1");
    assert.deepEqual(leasesIn(await scrape(registry)), new Set([uuid(1), uuid(2)]), "one failure forgiven");
    series.replace("mock-1", [lease(1)]);
    series.failed("mock-1");
    assert.equal(leasesIn(await scrape(registry)).has(uuid(1)), true, "a success resets the count");
    series.failed("mock-1");
    assert.deepEqual(leasesIn(await scrape(registry)), new Set([uuid(2)]), "second failure in a row drops");
    series.drop("mock-2");
    assert.deepEqual(leasesIn(await scrape(registry)), new Set());
  });

  it("caps the series across backends: exported instances stay, new ones are left out and counted", async () => {
    const registry = new Registry();
    const series = new LeaseUsageSeries(registry, 5);
    series.replace("mock-1", [lease(1), lease(2), lease(3)]);
    series.replace("mock-2", [lease(10), lease(11), lease(12), lease(13)]);
    assert.equal(series.size, 5);
    assert.equal(series.leftOut, 2);
    let text = await scrape(registry);
    assert.ok(text.includes("fred_lease_usage_series_left_out 2"), text);
    assert.equal(lines(text, "fred_lease_memory_bytes").length, 5);
    // New leases on mock-1 sort before its old ones: the old ones keep their series.
    series.replace("mock-1", [lease(0), lease(1), lease(2), lease(3)]);
    text = await scrape(registry);
    assert.equal(leasesIn(text).has(uuid(0)), false, "no room for a new lease");
    assert.ok([1, 2, 3].every((n) => leasesIn(text).has(uuid(n))));
    assert.equal(series.leftOut, 3);
    // Room made by an ended lease goes to a waiting one.
    series.replace("mock-2", [lease(11)]);
    series.replace("mock-1", [lease(0), lease(1), lease(2), lease(3)]);
    assert.equal(series.size, 5);
    assert.equal(leasesIn(await scrape(registry)).has(uuid(0)), true);
    assert.equal(series.leftOut, 0);
  });

  it("passes promtool check metrics", { skip: PROMTOOL_SKIP }, async () => {
    const registry = new Registry();
    new LeaseUsageSeries(registry).replace("mock-1", [lease(1, instance("web", 0), instance("db", 0))]);
    assert.equal(promtoolMetricsProblems(await scrape(registry)), "");
  });
});
