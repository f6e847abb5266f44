import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { stringify } from "yaml";
import { ManualClock } from "../../src/core/clock.ts";
import { isFredError } from "../../src/core/errors.ts";
import {
  type BackendClient,
  closeBackendClients,
  createBackendClients,
} from "../../src/provider/backend-client/index.ts";
import { type ProviderConfig, parseProviderConfig } from "../../src/provider/config/index.ts";
import { Router } from "../../src/provider/router.ts";
import { until } from "../support/until.ts";
import { type FakeBackend, startFakeBackend } from "./backend-client/fake-backend.ts";
import { baseConfig } from "./config/fixtures.ts";

/** The router with live `/stats` from real HTTP backends. */
const SKU = "0190f3a2-7c1e-7000-8000-00000000000a";
const SIDS = [
  "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f",
  "7a2d3b5f-9c4e-4d6f-8a71-8b9cad0e1f30",
  "8b3e4c60-ad5f-4e70-9b82-9cadbe1f2041",
];
const SECRETS = SIDS.map((_, i) => `router-test-secret-${i}-0123456789abcdef`);

let fakes: FakeBackend[];
let config: ProviderConfig;
let clients: Map<string, BackendClient>;
const clock = new ManualClock(Date.now());

before(async () => {
  fakes = await Promise.all(SIDS.map((storageId, i) => startFakeBackend({ storageId, secret: SECRETS[i]! })));
  const c = baseConfig();
  c.backends = fakes.map((f, i) => ({
    name: `b${i}`,
    url: f.url,
    hmac_secret: SECRETS[i],
    skus: [SKU],
    fenced: i === 2,
  }));
  config = parseProviderConfig(stringify(c));
  clients = await createBackendClients(config, new Map(SIDS.map((s, i) => [`b${i}`, s])), clock);
});
after(async () => {
  await closeBackendClients(clients);
  await Promise.all(fakes.map((f) => f.close()));
});

describe("router with live stats", () => {
  it("routes to the least-loaded backend and never asks the fenced one", async () => {
    fakes[0]!.stats = { total_cpu_cores: 8, allocated_cpu_cores: 6 };
    fakes[1]!.stats = { total_cpu_cores: 8, allocated_cpu_cores: 1 };
    const router = new Router({ backends: config.backends, clock });
    await router.refreshLoads(clients);
    const d = router.choose(SKU);
    assert.equal(d.kind === "backend" && d.backend, "b1");
    assert.equal(fakes[2]!.requests.length, 0);
  });

  it("in-flight provisions break a load tie", async () => {
    fakes[0]!.stats = { total_cpu_cores: 8, allocated_cpu_cores: 2 };
    fakes[1]!.stats = { total_cpu_cores: 8, allocated_cpu_cores: 2 };
    const router = new Router({ backends: config.backends, clock });
    await router.refreshLoads(clients);
    router.begin("b0");
    const d = router.choose(SKU);
    assert.equal(d.kind === "backend" && d.backend, "b1");
    assert.equal(d.kind === "backend" && d.via, "load");
    router.end("b0");
    assert.equal(router.inFlight(), 0);
  });

  it("without usable stats, two backends sharing SKUs share the load round-robin", async () => {
    fakes[0]!.stats = { total_cpu_cores: 0, allocated_cpu_cores: 0 };
    fakes[1]!.script.set("stats", [{ status: 500, body: { error: "down" } }]);
    const router = new Router({ backends: config.backends, clock });
    await router.refreshLoads(clients);
    const picks = Array.from({ length: 6 }, () => {
      const d = router.choose(SKU);
      return d.kind === "backend" ? d.backend : "none";
    });
    assert.deepEqual(picks.sort(), ["b0", "b0", "b0", "b1", "b1", "b1"]);
  });

  it("ignores readings older than the freshness window", async () => {
    fakes[0]!.stats = { total_cpu_cores: 8, allocated_cpu_cores: 7 };
    fakes[1]!.stats = { total_cpu_cores: 8, allocated_cpu_cores: 1 };
    const router = new Router({ backends: config.backends, clock, statsMaxAgeMs: 60_000 });
    await router.refreshLoads(clients);
    clock.advance(61_000);
    const first = router.choose(SKU);
    const second = router.choose(SKU);
    assert.equal(first.kind === "backend" && first.via, "round-robin");
    assert.notEqual(first.kind === "backend" && first.backend, second.kind === "backend" && second.backend);
  });

  it("reads /stats again within a second while leases are routed on the readings, not after the interval", async () => {
    fakes[0]!.stats = { total_cpu_cores: 8, allocated_cpu_cores: 1 };
    fakes[1]!.stats = { total_cpu_cores: 8, allocated_cpu_cores: 2 };
    const router = new Router({ backends: config.backends, clock });
    const statsReads = () => fakes[0]!.requests.filter((r) => r.url.startsWith("/stats?")).length;
    const before = statsReads();
    let rounds = 0;
    const controller = new AbortController();
    const stop = router.pollStats(clients, 15_000, () => rounds++, controller.signal);
    try {
      await until(() => rounds === 1, "the first round");
      // A lease routed on the reading: another round one second after the last, not at 15 s.
      const first = router.choose(SKU);
      assert.equal(first.kind === "backend" && first.backend, "b0");
      clock.advance(999);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(rounds, 1);
      // The backend admitted that lease (and more) since: the next reading sends leases elsewhere.
      fakes[0]!.stats = { total_cpu_cores: 8, allocated_cpu_cores: 3 };
      clock.advance(1);
      await until(() => rounds === 2, "an early round");
      assert.equal(statsReads() - before, 2);
      const next = router.choose(SKU);
      assert.equal(next.kind === "backend" && next.backend, "b1");
      clock.advance(1_000);
      await until(() => rounds === 3, "a second early round");
      // Nothing routed since: the next round waits for the interval.
      clock.advance(14_999);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(rounds, 3);
      clock.advance(1);
      await until(() => rounds === 4, "the interval's round");
      // A choice long after the last round asks for one at once.
      clock.advance(10_000);
      router.choose(SKU);
      clock.advance(0);
      await until(() => rounds === 5, "a round at once");
      assert.equal(statsReads() - before, 5);
    } finally {
      stop();
      controller.abort();
    }
  });

  it("refuses to build clients for backends without a pinned storage ID", async () => {
    await assert.rejects(createBackendClients(config, new Map([["b0", SIDS[0]!]]), clock), (err) =>
      isFredError(err, "ERR_BACKEND_NOT_PINNED"),
    );
  });
});
