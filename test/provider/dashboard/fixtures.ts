import type { FixtureData, FixtureLease } from "./fixture-server.ts";

/**
 * Data in the read API's shapes for the fixture server: two backends, 60 leases (two pages
 * of 50), alerts firing, and tenant-controlled strings that are markup, which the page must
 * show as text.
 */
export const HOSTILE = `<img src=x onerror="document.body.dataset.owned=1">`;
export const TENANT = "manifest1tenant0000000000000000000000000000";
const NOW = Date.parse("2026-12-05T12:00:00Z");
const iso = (secondsAgo: number) => new Date(NOW - secondsAgo * 1000).toISOString();
const SKU_A = "0f1e2d3c-4b5a-4697-8877-665544332211";
const SKU_B = "1f1e2d3c-4b5a-4697-8877-665544332211";

const uuidOf = (i: number) => `${i.toString(16).padStart(8, "0")}-aaaa-4bbb-8ccc-${"d".repeat(12)}`;

export const LEASES: FixtureLease[] = Array.from({ length: 60 }, (_, i) => ({
  uuid: uuidOf(i + 1),
  tenant: i % 2 === 0 ? TENANT : "manifest1other000000000000000000000000000000",
  state: i < 55 ? "active" : "closed",
  backend: i % 3 === 0 ? "mock-b" : "mock-a",
  sku: i % 3 === 0 ? SKU_B : SKU_A,
  created_at: iso(3600 + i * 60),
  record_state: i < 55 ? "confirmed" : null,
}));

export const FIRST = LEASES[0]!.uuid;

const series = (f: (i: number) => number) =>
  Array.from({ length: 120 }, (_, i) => [Math.floor(NOW / 1000) - (119 - i) * 60, f(i)] as [number, number]);

export const FIXTURE: FixtureData = {
  overview: {
    generated_at: iso(0),
    provider: {
      address: "manifest1provider000000000000000000000000000",
      version: "0.1.0",
      uptime_seconds: 7384,
    },
    chain: { height: 12345, last_block_at: iso(2), lag_seconds: 1.2 },
    leases: {
      chain: { pending: 1, active: 55, closed: 5, rejected: 2, expired: 0 },
      records: { confirmed: 55, provisioning: 1, failed: 0, conflicts: 0 },
    },
    provisions_per_hour: Array.from({ length: 24 }, (_, i) => ({
      hour: iso((24 - i) * 3600),
      succeeded: (i * 7) % 5,
      failed: i % 6 === 0 ? 1 : 0,
    })),
    earnings: {
      withdrawn: [{ denom: "umfx", amount: "123456789" }],
      accrued: [
        { denom: "umfx", amount: "4200" },
        { denom: "upwr", amount: "17" },
      ],
      last_withdrawal_at: iso(1800),
    },
    credit_closes: { last_24h: 1, total: 4 },
    reconciler: {
      last_sweep_at: iso(20),
      last_success_at: iso(20),
      complete: true,
      duration_seconds: 0.42,
      actions: { noop: 58, reprovision: 1 },
    },
    alerts: [{ name: "FredBackendUnhealthy", severity: "page", summary: `mock-b is unhealthy ${HOSTILE}` }],
  },
  fleet: {
    generated_at: iso(0),
    backends: [
      {
        name: "mock-a",
        url_host: "127.0.0.1:9001",
        healthy: true,
        version: "0.1.0",
        storage_id: "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b",
        fenced: false,
        draining: false,
        breaker: "closed",
        cpu: { allocated: 6.5, total: 8 },
        memory: { allocated: 12 * 2 ** 30, total: 32 * 2 ** 30 },
        disk: { allocated: 300 * 2 ** 30, total: 1024 * 2 ** 30 },
        leases: 40,
        skus: [SKU_A],
        last_inventory_at: iso(15),
      },
      {
        name: "mock-b",
        url_host: "127.0.0.1:9002",
        healthy: false,
        version: null,
        storage_id: null,
        fenced: false,
        draining: true,
        breaker: "open",
        cpu: null,
        memory: null,
        disk: null,
        leases: 20,
        skus: [SKU_B],
        last_inventory_at: null,
      },
    ],
  },
  leases: LEASES,
  details: {
    [FIRST]: {
      uuid: FIRST,
      tenant: TENANT,
      chain: {
        state: "active",
        created_at: iso(3600),
        closed_at: null,
        items: [{ sku: SKU_B, quantity: 1 }],
      },
      placement: { backend: "mock-b", state: "confirmed", since: iso(3500) },
      attempts: [
        {
          id: "att-1",
          backend: "mock-b",
          kind: "provision",
          outcome: "succeeded",
          started_at: iso(3590),
          settled_at: iso(3580),
        },
      ],
      releases: [
        { version: 1, status: "superseded", image: "docker.io/library/nginx:1.27", created_at: iso(3590) },
        { version: 2, status: "active", image: HOSTILE, created_at: iso(600) },
      ],
      diagnostics: { last_error: HOSTILE, restarts: 0 },
      events: [{ at: iso(3580), kind: "provisioned", detail: `ready ${HOSTILE}` }],
      usage: {
        sample_interval_seconds: 10,
        instances: [
          {
            service: "app",
            instance: 0,
            sampled_at: iso(5),
            cpu_cores: 0.25,
            cpu_limit_cores: 0.5,
            memory_bytes: 128 * 2 ** 20,
            memory_limit_bytes: 512 * 2 ** 20,
            network_rx_bytes: 9914,
            network_tx_bytes: 4957,
            disk_bytes: null,
            disk_quota_bytes: 2 ** 30,
            restarts: 0,
            uptime_seconds: 3500,
          },
        ],
      },
      backend_read: "ok",
    },
  },
  series: {
    step_seconds: 60,
    window_seconds: 86400,
    series: {
      leases_active: series((i) => 50 + (i % 6)),
      provisions_per_minute: series((i) => (i % 10 === 0 ? 2 : 0)),
      provision_latency_p50_seconds: series(() => 1.2),
      provision_latency_p99_seconds: series((i) => 3 + (i % 4) / 2),
      api_requests_per_second: series((i) => 4 + Math.sin(i / 8) * 2),
      api_errors_per_second: series((i) => (i % 30 === 0 ? 0.5 : 0)),
      earnings: { umfx: series((i) => 1000 + i * 10) },
    },
  },
};
