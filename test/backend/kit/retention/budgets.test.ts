import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, beforeEach, describe, it } from "node:test";
import { parseTenantManifest, type RunningBackend, startBackend } from "../../../../src/backend/kit/index.ts";
import type { RetentionPolicy } from "../../../../src/backend/kit/retention/index.ts";
import type { InstanceSpec, RetainedInventory, RetainedSet } from "../../../../src/backend/kit/substrate.ts";
import { MockSubstrate } from "../../../../src/backend/mock/substrate.ts";
import { ManualClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";
import { type SignedClient, signedClient } from "../signed-client.ts";

/**
 * Retention budgets, the reaper and the orphan pruner on the kit with an injected clock:
 * count caps evict the tenant's own oldest, disk caps refuse (the close destroys) and
 * never touch another tenant, partitions sub-divide an aggregator's budget, expired rows
 * are destroyed every reap interval, an orphan row goes only after N consecutive
 * complete listings of the same root, and a failed restore's destination never retains.
 */
const SECRET = "kit-retention-test-secret-0123456789abcdef";
const SKU = "0190f3a2-7c1e-7000-8000-00000000e001";
const HOUR = 3_600_000;

/** The mock substrate plus a retained namespace it can list, whose root identity a test can swap. */
class ListingSubstrate extends MockSubstrate {
  readonly names = new Set<string>();
  identity = "root-a";
  destroyed: string[] = [];

  override async retain(
    lease: string,
    instances: readonly InstanceSpec[],
    signal: AbortSignal,
  ): Promise<RetainedSet> {
    const set = await super.retain(lease, instances, signal);
    for (const v of set.volumes) this.names.add(v.name);
    return { ...set, fsIdentity: set.volumes.length > 0 ? this.identity : undefined };
  }

  override async destroyRetained(
    lease: string,
    names: readonly string[],
    signal: AbortSignal,
  ): Promise<void> {
    await super.destroyRetained(lease, names, signal);
    for (const n of names) this.names.delete(n);
    this.destroyed.push(lease);
  }

  async retainedInventory(): Promise<RetainedInventory> {
    return { fsIdentity: this.identity, names: new Set(this.names) };
  }
}

const policy = (extra: Partial<RetentionPolicy> = {}): RetentionPolicy => ({
  retainOnClose: true,
  maxAgeMs: 10 * HOUR,
  reapIntervalMs: HOUR,
  orphanConfirmations: 3,
  maxRetainedLeasesPerTenant: 0,
  maxRetainedDiskMb: 0,
  maxRetainedDiskMbPerTenant: 0,
  partitionSource: { kind: "none" },
  tenantBudgets: {},
  ...extra,
});

describe("retention budgets, reaper and orphan pruner (kit, manual clock)", () => {
  let clock: ManualClock;
  let substrate: ListingSubstrate;
  let b: RunningBackend | undefined;
  let c: SignedClient;
  const provider = randomUUID();
  /** Leases whose every start fails (the mock substrate's injection). */
  const failing = new Set<string>();

  const start = async (p: RetentionPolicy) => {
    clock = new ManualClock(Date.now());
    substrate = new ListingSubstrate({
      clock,
      backendName: "kit-retention",
      delayMs: 0,
      failRate: 0,
      failLeases: failing,
      hangLeases: new Set(),
      retainedDiskMb: 10,
    });
    b = await startBackend({
      name: "kit-retention",
      substrate,
      journal: { path: ":memory:", mode: "bind-or-verify", storageId: randomUUID() },
      logger: createLogger("kit-retention", process.env.TEST_LOG_LEVEL ?? "silent"),
      clock,
      secret: SECRET,
      listen: { host: "127.0.0.1", port: 0 },
      resolveSku: () => ({ cpu_cores: 0.1, memory_mb: 32, disk_mb: 100 }),
      pool: { totals: { cpuCores: 64, memoryMb: 65536, diskMb: 100_000 } },
      parseManifest: parseTenantManifest,
      retention: p,
    });
    c = signedClient(b.url, SECRET, () => clock.now());
  };
  beforeEach(async () => {
    await b?.close();
    b = undefined;
  });
  after(async () => b?.close());

  const event = (name: "operation:settled" | "close:done", lease: string) =>
    new Promise<void>((resolve) => {
      const off = b?.engine.on((e, l) => {
        if (e === name && l === lease) {
          off?.();
          resolve();
        }
      });
    });
  /** A ready lease of `tenant`, closed; resolves when the close completed. */
  const closeOne = async (tenant: string, opts: { mb?: number; labels?: Record<string, string> } = {}) => {
    const lease = randomUUID();
    const settled = event("operation:settled", lease);
    const services = {
      web: { image: "docker.io/library/nginx:1", ...(opts.labels ? { labels: opts.labels } : {}) },
    };
    const res = await c.post("/provision", {
      lease_uuid: lease,
      tenant,
      provider_uuid: provider,
      items: [{ sku: SKU, quantity: 1, service_name: "web" }],
      callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${randomUUID()}`,
      payload: Buffer.from(JSON.stringify({ services })).toString("base64"),
    });
    assert.equal(res.status, 202, res.text);
    await settled;
    if (opts.mb !== undefined) substrate.setRetainedSize(lease, opts.mb);
    const closed = event("close:done", lease);
    assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
    await closed;
    clock.advance(1000); // distinct retention times: "oldest" is well defined
    return lease;
  };
  const statusOf = (lease: string) => b?.retention?.store.get(lease)?.status;
  const sweepAfter = async (ms: number) => {
    const swept = new Promise<void>((resolve) => {
      const off = b?.retention?.on(() => {
        off?.();
        resolve();
      });
    });
    clock.advance(ms);
    await swept;
  };
  const retainedFlag = (lease: string) => {
    const row = b?.journal.db
      .prepare("SELECT body FROM outbox WHERE lease_uuid = ? AND kind = 'close'")
      .get(lease) as { body: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.body) as { retained: boolean }).retained;
  };

  it("a count cap evicts the tenant's own oldest retained lease, never another tenant's", async () => {
    await start(policy({ maxRetainedLeasesPerTenant: 2 }));
    const other = await closeOne("manifest1other");
    const [a1, a2, a3] = [
      await closeOne("manifest1a"),
      await closeOne("manifest1a"),
      await closeOne("manifest1a"),
    ];
    assert.equal(statusOf(a1 as string), "reaping", "the oldest is evicted");
    assert.equal(statusOf(a2 as string), "active");
    assert.equal(statusOf(a3 as string), "active");
    assert.equal(statusOf(other), "active");
    await sweepAfter(HOUR);
    assert.equal(statusOf(a1 as string), undefined, "the evicted copy is destroyed by the sweep");
    assert.ok(substrate.destroyed.includes(a1 as string));
  });

  it("a disk cap refuses to retain (the close destroys) and evicts nobody", async () => {
    await start(policy({ maxRetainedDiskMbPerTenant: 100, maxRetainedDiskMb: 150 }));
    const a1 = await closeOne("manifest1a", { mb: 60 });
    const a2 = await closeOne("manifest1a", { mb: 60 });
    assert.equal(statusOf(a1), "active");
    assert.equal(statusOf(a2), undefined, "over the per-tenant cap: destroyed");
    assert.equal(retainedFlag(a1), true);
    assert.equal(retainedFlag(a2), false);
    const bOk = await closeOne("manifest1b", { mb: 60 });
    const bRefused = await closeOne("manifest1b", { mb: 40 });
    assert.equal(statusOf(bOk), "active");
    assert.equal(statusOf(bRefused), undefined, "over the global cap: destroyed, a1 untouched");
    assert.equal(statusOf(a1), "active");
    assert.equal(b?.engine.pool.stats().retained_disk_mb, 120);
  });

  it("partitions sub-divide an aggregator's budget; one past max_partitions lands in the tenant bucket", async () => {
    await start(
      policy({
        partitionSource: { kind: "label", key: "customer" },
        tenantBudgets: {
          manifest1agg: {
            maxRetainedLeases: 0,
            maxRetainedDiskMb: 0,
            maxPartitions: 1,
            perPartitionMaxLeases: 1,
            perPartitionMaxDiskMb: 0,
          },
        },
      }),
    );
    const x1 = await closeOne("manifest1agg", { labels: { customer: "x" } });
    assert.equal(b?.retention?.store.get(x1)?.partition, "x");
    const info = (await c.get(`/provisions/${x1}`)).json as Record<string, unknown>;
    assert.equal(info.partition, "x");
    const x2 = await closeOne("manifest1agg", { labels: { customer: "x" } });
    assert.equal(statusOf(x1), "reaping", "the partition's count cap evicts its oldest");
    assert.equal(statusOf(x2), "active");
    const y1 = await closeOne("manifest1agg", { labels: { customer: "y" } });
    assert.equal(b?.retention?.store.get(y1)?.partition, "", "over max_partitions: the tenant bucket");
    assert.equal(statusOf(x2), "active", "a collapsed lease evicts nothing of the partition");
  });

  it("the reaper destroys expired rows every reap interval", async () => {
    await start(policy());
    const lease = await closeOne("manifest1a");
    const info = (await c.get(`/provisions/${lease}`)).json as Record<string, unknown>;
    assert.equal(typeof info.retained_until, "string");
    for (let h = 0; h < 9; h++) await sweepAfter(HOUR);
    assert.equal(statusOf(lease), "active", "9 h < retention_max_age (10 h)");
    await sweepAfter(HOUR);
    await sweepAfter(HOUR);
    assert.equal(statusOf(lease), undefined);
    assert.ok(substrate.destroyed.includes(lease));
    const page = (await c.get("/retentions")).json as { retentions: unknown[] };
    assert.deepEqual(page.retentions, []);
  });

  it("prunes an orphan only after 3 consecutive listings of the same root, never across another root", async () => {
    await start(policy({ maxAgeMs: 0 }));
    const orphan = await closeOne("manifest1a");
    const kept = await closeOne("manifest1a");
    const unmounted = await closeOne("manifest1a");
    for (const n of [...substrate.names]) if (n.includes(orphan)) substrate.names.delete(n);
    await sweepAfter(HOUR);
    await sweepAfter(HOUR);
    assert.equal(statusOf(orphan), "active", "two misses are not proof");
    await sweepAfter(HOUR);
    assert.equal(statusOf(orphan), undefined, "the third consecutive miss prunes it");
    assert.equal(statusOf(kept), "active");
    // The root changes identity (an unmounted disk shows an empty directory): nothing is pruned.
    substrate.identity = "root-b";
    substrate.names.clear();
    for (let i = 0; i < 5; i++) await sweepAfter(HOUR);
    assert.equal(statusOf(kept), "active");
    assert.equal(statusOf(unmounted), "active");
  });

  it("a failed restore's destination, closed after a sweep discarded its copy, is destroyed, not retained; the source keeps the data", async () => {
    await start(policy());
    const source = await closeOne("manifest1a");
    const dest = randomUUID();
    failing.add(dest);
    const settled = event("operation:settled", dest);
    const op = randomUUID();
    const restore = await c.post("/restore", {
      lease_uuid: dest,
      from_lease_uuid: source,
      tenant: "manifest1a",
      provider_uuid: provider,
      items: [{ sku: SKU, quantity: 1, service_name: "web" }],
      callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${op}`,
      lifecycle_callback_url: `http://127.0.0.1:9/callbacks/provision?lifecycle_id=${op}`,
    });
    assert.equal(restore.status, 202, restore.text);
    await settled;
    assert.equal(((await c.get(`/provisions/${dest}`)).json as { status: string }).status, "failed");
    assert.equal(statusOf(source), "active", "the data is handed back to the source");
    // The sweep finds the failed destination idle and discards its copy (again).
    await sweepAfter(HOUR);
    // Then the provider closes the destination (its lease was rejected on chain).
    const closed = event("close:done", dest);
    assert.equal((await c.post("/deprovision", { lease_uuid: dest })).status, 200);
    await closed;
    assert.equal(statusOf(dest), undefined, "nothing of the failed destination is retained");
    assert.equal(retainedFlag(dest), false, "its close callback says so");
    assert.equal(statusOf(source), "active");
    const page = (await c.get("/retentions")).json as { retentions: { lease_uuid: string }[] };
    assert.deepEqual(
      page.retentions.map((r) => r.lease_uuid),
      [source],
    );
  });
});
