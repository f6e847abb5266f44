import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { runFred, until } from "../../support/index.ts";
import { PROMTOOL_SKIP, promtoolMetricsProblems } from "../../support/promtool.ts";
import { call, TenantKey } from "../api/tenant-client.ts";
import { mockSkus, Stack } from "../e2e/stack.ts";

/**
 * `lease_usage_metrics` through real processes: a devnet, providerd and two mock backends
 * (mock-1 samples every 200 ms; mock-2 cannot sample, MOCK_BACKEND_USAGE=0). Off: no
 * fred_lease_* series. On: the active lease's series with exactly its three labels, values
 * the lease's own usage answer shows, none from the backend that cannot sample,
 * promtool-clean, and gone once the lease is closed. A non-boolean value is refused at
 * startup naming the key.
 */
const stack = new Stack();
let tenant: TenantKey;
let running: string;
let unsampled: string;

before(async () => {
  await stack.start(
    (s): Record<string, string>[] => [
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")),
        MOCK_BACKEND_DELAY: "0s",
        MOCK_BACKEND_USAGE_SAMPLE_INTERVAL: "200ms",
      },
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-medium")),
        MOCK_BACKEND_DELAY: "0s",
        MOCK_BACKEND_USAGE: "0",
      },
    ],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-medium")] }];
    },
  );
  tenant = new TenantKey(stack.account("tenant1").private_key_hex);
  await stack.startProviderd();
  running = (await stack.createLeases(1, "docker-small"))[0] as string;
  unsampled = (await stack.createLeases(1, "docker-medium"))[0] as string;
  await stack.waitState([running, unsampled], "LEASE_STATE_ACTIVE");
});

after(async () => {
  await stack.close();
});

const metrics = async () => (await fetch(`${stack.api}/metrics`)).text();
const leaseLines = (text: string) => text.split("\n").filter((l) => l.startsWith("fred_lease_"));

type Current = Record<string, number | null> & { service: string; instance: number };
type UsageBody = {
  instances: Current[];
  history: { instances: Record<string, (number | null)[]>[] };
};

async function usageOf(lease: string): Promise<UsageBody> {
  const a = await call(stack.api, `/v1/leases/${lease}/usage`, tenant.access(lease));
  assert.equal(a.status, 200, a.text);
  return a.body as unknown as UsageBody;
}

/** The value of `name{lease_uuid="lease",…}` in an exposition text, or undefined. */
function seriesValue(
  text: string,
  name: string,
  lease: string,
): { labels: string; value: number } | undefined {
  const m = new RegExp(`^${name}\\{(lease_uuid="${lease}"[^}]*)\\} (\\S+)$`, "m").exec(text);
  return m === null ? undefined : { labels: m[1] as string, value: Number(m[2]) };
}

describe("lease_usage_metrics (devnet + providerd + mock backends)", () => {
  it("off (the default): the lease is sampled, and /metrics has no fred_lease_* series", async () => {
    await until(async () => (await usageOf(running)).instances.length === 1, "the lease is sampled");
    const text = await metrics();
    assert.match(text, /^fred_leases\{/m, "providerd's own metrics are there");
    assert.deepEqual(leaseLines(text), []);
  });

  it("a non-boolean value is refused at startup, naming the key", async () => {
    await stack.stopProviderd();
    stack.extraConfig = { lease_usage_metrics: "yes" };
    stack.writeConfig();
    const r = await runFred(["providerd", "-c", stack.configPath], { env: { FRED_LOG_LEVEL: "error" } });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /lease_usage_metrics must be true or false/);
  });

  it("on: the active lease's series with its three labels and the values its usage answer shows", async () => {
    stack.extraConfig = { lease_usage_metrics: true };
    stack.writeConfig();
    await stack.startProviderd();
    let text = "";
    await until(
      async () => {
        text = await metrics();
        return seriesValue(text, "fred_lease_cpu_cores", running) !== undefined;
      },
      "the lease's usage series on /metrics",
      { timeoutMs: 60_000, intervalMs: 250, context: () => leaseLines(text).join("\n") },
    );
    const memory = seriesValue(text, "fred_lease_memory_bytes", running)!;
    assert.equal(memory.labels, `lease_uuid="${running}",service="app",instance="0"`);
    for (const line of leaseLines(text).filter((l) => l.includes("{")))
      assert.match(line, /\{lease_uuid="[0-9a-f-]{36}",service="[^"]+",instance="\d+"\} /, line);
    assert.equal(text.includes(unsampled), false, "no series from the backend that cannot sample");
    // The usage answer read after the scrape holds the scraped pass in its history (an hour).
    const usage = await usageOf(running);
    const now = usage.instances[0]!;
    const history = usage.history.instances[0]!;
    assert.equal(seriesValue(text, "fred_lease_memory_limit_bytes", running)!.value, now.memory_limit_bytes);
    assert.equal(seriesValue(text, "fred_lease_disk_quota_bytes", running)!.value, now.disk_quota_bytes);
    assert.ok(history.memory_bytes!.includes(memory.value), `${memory.value} in ${history.memory_bytes}`);
    const rx = seriesValue(text, "fred_lease_network_receive_bytes_total", running)!.value;
    assert.ok(history.network_rx_bytes!.includes(rx), `${rx} in ${history.network_rx_bytes}`);
    const tx = seriesValue(text, "fred_lease_network_transmit_bytes_total", running)!.value;
    assert.ok(history.network_tx_bytes!.includes(tx), `${tx} in ${history.network_tx_bytes}`);
    const disk = seriesValue(text, "fred_lease_disk_bytes", running)!.value;
    assert.ok(history.disk_bytes!.includes(disk), `${disk} in ${history.disk_bytes}`);
    const cores = seriesValue(text, "fred_lease_cpu_cores", running)!.value;
    assert.ok(cores > 0 && cores <= 0.5, String(cores));
    assert.ok(seriesValue(text, "fred_lease_cpu_throttled_seconds_total", running) !== undefined);
    assert.match(text, /^fred_lease_usage_series_left_out 0$/m);
  });

  it("providerd's /metrics with lease series passes promtool check metrics", {
    skip: PROMTOOL_SKIP,
  }, async () => {
    const text = await metrics();
    assert.ok(seriesValue(text, "fred_lease_memory_bytes", running) !== undefined);
    assert.equal(promtoolMetricsProblems(text), "");
  });

  it("a closed lease's series are removed", async () => {
    await stack.tenant.closeLeases([running], "done");
    let text = "";
    await until(
      async () => {
        text = await metrics();
        return !text.includes(running);
      },
      "the closed lease's series are gone",
      { timeoutMs: 60_000, intervalMs: 250, context: () => leaseLines(text).join("\n") },
    );
    assert.deepEqual(
      leaseLines(text).filter((l) => l.includes("{")),
      [],
    );
  });
});
