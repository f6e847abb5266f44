import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { until } from "../../support/index.ts";
import { mockSkus, SECRETS, Stack, sha256 } from "../e2e/stack.ts";
import { type Answer, call, envelope, TenantKey } from "./tenant-client.ts";

/**
 * `GET /v1/leases/{uuid}/usage` through real processes: a devnet, providerd and three mock
 * backends. mock-1 (docker-small) samples every 200 ms; mock-2 (docker-medium) cannot
 * sample (MOCK_BACKEND_USAGE=0: 501 unsupported); mock-3 (docker-large) accepts usage
 * reads and never answers them (providerd's backend timeout is 2 s there).
 */
const stack = new Stack();
let tenant1: TenantKey;
let tenant2: TenantKey;
let running: string;
const MiB = 1024 * 1024;

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
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-large")),
        MOCK_BACKEND_DELAY: "0s",
        MOCK_BACKEND_HANG_USAGE: "1",
      },
    ],
    (s) => {
      s.backendOverrides = [
        { skus: [s.sku("docker-small")] },
        { skus: [s.sku("docker-medium")] },
        { skus: [s.sku("docker-large")], timeout: "2s" },
      ];
    },
  );
  tenant1 = new TenantKey(stack.account("tenant1").private_key_hex);
  tenant2 = new TenantKey(stack.account("tenant2").private_key_hex);
  await stack.startProviderd();
  running = (await stack.createLeases(1, "docker-small"))[0] as string;
  await stack.waitState([running], "LEASE_STATE_ACTIVE");
});

after(async () => {
  await stack.close();
});

const usage = (lease: string, token = tenant1.access(lease)) =>
  call(stack.api, `/v1/leases/${lease}/usage`, token);

function refused(a: Answer, status: number): { error: string; reason?: string } {
  assert.equal(a.status, status, a.text);
  return envelope(a);
}

type Instance = Record<string, unknown> & { service: string; instance: number };
type Body = {
  lease_uuid: string;
  sample_interval_seconds: number;
  instances: Instance[];
  history: { timestamps: string[]; instances: (Instance & Record<string, (number | null)[]>)[] };
};

/** The lease's usage once `ok` holds for it (polled). */
async function usageWhen(lease: string, ok: (b: Body) => boolean, what: string): Promise<Body> {
  let last: Body | undefined;
  return until(
    async () => {
      const a = await usage(lease);
      assert.equal(a.status, 200, a.text);
      last = a.body as unknown as Body;
      return ok(last) ? last : undefined;
    },
    what,
    { timeoutMs: 30_000, intervalMs: 100, context: () => JSON.stringify(last?.instances) },
  );
}

describe("GET /v1/leases/{uuid}/usage (devnet + providerd + mock backends)", () => {
  it("answers each instance's usage with the SKU's limits and a history that grows", async () => {
    const first = await usageWhen(running, (b) => b.history.timestamps.length >= 3, "three samples");
    assert.equal(first.lease_uuid, running);
    assert.equal(first.sample_interval_seconds, 0.2);
    assert.equal(first.instances.length, 1);
    const now = first.instances[0]!;
    assert.equal(now.service, "app");
    assert.equal(now.instance, 0);
    assert.equal(now.memory_limit_bytes, 512 * MiB);
    assert.equal(now.disk_quota_bytes, 1024 * MiB);
    assert.equal(now.cpu_limit_cores, 0.5);
    assert.ok(
      typeof now.cpu_cores === "number" && now.cpu_cores > 0 && now.cpu_cores <= 0.5,
      String(now.cpu_cores),
    );
    for (const key of [
      "memory_bytes",
      "network_rx_bytes",
      "network_tx_bytes",
      "disk_bytes",
      "uptime_seconds",
    ])
      assert.equal(typeof now[key], "number", key);
    assert.equal(now.restarts, 0);
    assert.ok(!Number.isNaN(Date.parse(now.started_at as string)));
    const h = first.history;
    assert.deepEqual(Object.keys(h.instances[0]!).sort(), [
      "cpu_cores",
      "disk_bytes",
      "instance",
      "memory_bytes",
      "network_rx_bytes",
      "network_tx_bytes",
      "service",
    ]);
    for (const m of ["cpu_cores", "memory_bytes", "disk_bytes"])
      assert.equal(h.instances[0]![m]!.length, h.timestamps.length, m);
    assert.deepEqual([...h.timestamps].sort(), h.timestamps, "oldest first");
    const later = await usageWhen(
      running,
      (b) => b.history.timestamps.length >= first.history.timestamps.length + 3,
      "three more samples",
    );
    const rx = later.history.instances[0]!.network_rx_bytes!.filter((v) => v !== null);
    assert.ok(rx.at(-1)! > rx[0]!, "counters grow");
  });

  it("shows the CPU demand above the SKU as throttled and disk writes as disk bytes", async () => {
    const before = (await usageWhen(running, (b) => b.instances[0]?.cpu_cores !== null, "a CPU figure"))
      .instances[0]!;
    const mock = signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!);
    const drove = await mock.post(`/_mock/usage/${running}`, { cpu_cores: 2, disk_bytes: 5 * MiB });
    assert.equal(drove.status, 200, drove.text);
    const busy = await usageWhen(
      running,
      (b) => b.instances[0]!.cpu_cores === 0.5 && (b.instances[0]!.cpu_throttled_seconds as number) > 0,
      "CPU at the SKU's 0.5 cores, the rest throttled",
    );
    assert.ok((busy.instances[0]!.disk_bytes as number) >= (before.disk_bytes as number) + 5 * MiB);
    assert.equal((await mock.post(`/_mock/usage/${running}`, { cpu_cores: -1 })).status, 400);
  });

  it("refuses another tenant (403), a bad UUID (400), no token (401) and an unknown lease (404)", async () => {
    refused(await usage(running, tenant2.access(running)), 403);
    refused(await call(stack.api, "/v1/leases/not-a-uuid/usage", tenant1.access(running)), 400);
    refused(await call(stack.api, `/v1/leases/${running}/usage`, undefined), 401);
    const unknown = "0b9a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
    refused(await usage(unknown), 404);
  });

  it("a PENDING lease nothing runs for is 404 lease not yet provisioned", async () => {
    // A payload lease without its upload is never placed: no backend holds it.
    const [pending] = await stack.createLeases(1, "docker-small", sha256(Buffer.from("never uploaded")));
    assert.equal((await usage(pending!)).status, 404);
    assert.equal(refused(await usage(pending!), 404).error, "lease not yet provisioned");
  });

  it("a backend without sampling answers 501 unsupported, and that never opens its circuit", async () => {
    const [lease] = await stack.createLeases(1, "docker-medium");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    for (let i = 0; i < 7; i++) {
      const e = refused(await usage(lease!), 501);
      assert.equal(e.reason, "unsupported");
      assert.doesNotMatch(e.error, /backend mock|\/usage/);
    }
    // Seven 501s in a row and the backend still answers its other reads.
    const logs = await call(stack.api, `/v1/leases/${lease}/logs`, tenant1.access(lease!));
    assert.equal(logs.status, 200, logs.text);
  });

  it("a backend that never answers is a 500 after the backend timeout; other leases keep answering", async () => {
    const [lease] = await stack.createLeases(1, "docker-large");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    const started = Date.now();
    const hung = await usage(lease!);
    refused(hung, 500);
    assert.ok(Date.now() - started >= 1_500, "answered only once the 2 s backend timeout passed");
    assert.equal((await usage(running)).status, 200);
  });

  it("a closed lease is 404 once its backend forgot it", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    await usageWhen(lease!, (b) => b.instances.length === 1, "the new lease sampled");
    await stack.tenant.closeLeases([lease!], "done");
    let last: Answer | undefined;
    await until(
      async () => {
        last = await usage(lease!);
        return last.status === 404;
      },
      "usage of the closed lease is 404",
      { timeoutMs: 30_000, intervalMs: 200, context: () => `${last?.status} ${last?.text}` },
    );
  });
});
