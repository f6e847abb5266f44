import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { ResourcePool } from "../../../src/backend/kit/resources.ts";
import type { InstanceSpec } from "../../../src/backend/kit/substrate.ts";

/**
 * Random allocate / markRunning / release / expire sequences against a simple model:
 * the books always equal the sum of live leases, never exceed the totals or a tenant's
 * quota, available never goes negative, and a refused allocation changes nothing.
 */
const TOTALS = { cpuCores: 8, memoryMb: 8192, diskMb: 20_000 };
const QUOTA = { maxCpuCores: 5, maxMemoryMb: 6000, maxDiskMb: 15_000 };
const TENANTS = ["t1", "t2", "t3"];
const LEASES = Array.from({ length: 8 }, (_, i) => `0190f3a2-7c1e-7000-8000-00000000000${i}`);

const profileArb = fc.record({
  cpu_cores: fc.constantFrom(0.25, 0.5, 1, 1.5, 2),
  memory_mb: fc.constantFrom(128, 256, 512, 1024, 2048),
  disk_mb: fc.constantFrom(0, 512, 1024, 4096),
});
const opArb = fc.oneof(
  fc.record({
    kind: fc.constant("allocate" as const),
    lease: fc.constantFrom(...LEASES),
    tenant: fc.constantFrom(...TENANTS),
    instances: fc.array(profileArb, { minLength: 1, maxLength: 4 }),
    ttl: fc.integer({ min: 1, max: 100 }),
  }),
  fc.record({ kind: fc.constant("running" as const), lease: fc.constantFrom(...LEASES) }),
  fc.record({ kind: fc.constant("release" as const), lease: fc.constantFrom(...LEASES) }),
  fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 60 }) }),
);

interface ModelLease {
  tenant: string;
  cpu: number;
  mem: number;
  disk: number;
  running: boolean;
  expiresAt: number;
}

function specs(lease: string, profiles: { cpu_cores: number; memory_mb: number; disk_mb: number }[]) {
  return profiles.map(
    (profile, index): InstanceSpec => ({
      key: `${lease}-app-${index}`,
      service: "app",
      index,
      sku: "s",
      profile,
    }),
  );
}

describe("resource pool (property)", () => {
  it("keeps the books consistent and within totals and quotas", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const pool = new ResourcePool({ totals: TOTALS, quota: QUOTA });
        const model = new Map<string, ModelLease>();
        let now = 0;
        for (const op of ops) {
          const before = pool.stats();
          if (op.kind === "allocate") {
            const inst = specs(op.lease, op.instances);
            const refusal = pool.allocate(op.lease, op.tenant, inst, "reserved", now + op.ttl);
            if (refusal === undefined) {
              const profiles = op.instances;
              const sum = (f: (p: (typeof profiles)[number]) => number) =>
                profiles.reduce((n, p) => n + f(p), 0);
              model.set(op.lease, {
                tenant: op.tenant,
                cpu: Math.round(sum((p) => p.cpu_cores) * 1000),
                mem: sum((p) => p.memory_mb),
                disk: sum((p) => p.disk_mb),
                running: false,
                expiresAt: now + op.ttl,
              });
            } else {
              assert.deepEqual(pool.stats(), before, "a refusal changes nothing");
              if (refusal === "duplicate") assert.ok(model.has(op.lease));
            }
          } else if (op.kind === "running") {
            assert.equal(pool.markRunning(op.lease), model.has(op.lease));
            const m = model.get(op.lease);
            if (m) m.running = true;
          } else if (op.kind === "release") {
            pool.release(op.lease);
            model.delete(op.lease);
          } else {
            now += op.ms;
            const expired = pool.expireReservations(now).sort();
            const expected = [...model]
              .filter(([, m]) => !m.running && m.expiresAt <= now)
              .map(([l]) => l)
              .sort();
            assert.deepEqual(expired, expected);
            for (const l of expired) model.delete(l);
          }
          // Invariants after every step.
          const s = pool.stats();
          const total = (f: (m: ModelLease) => number) => [...model.values()].reduce((n, m) => n + f(m), 0);
          assert.equal(
            Math.round(s.allocated_cpu_cores * 1000),
            total((m) => m.cpu),
          );
          assert.equal(
            s.allocated_memory_mb,
            total((m) => m.mem),
          );
          assert.equal(
            s.allocated_disk_mb,
            total((m) => m.disk),
          );
          assert.ok(s.allocated_cpu_cores <= TOTALS.cpuCores + 1e-9);
          assert.ok(s.allocated_memory_mb <= TOTALS.memoryMb);
          assert.ok(s.allocated_disk_mb <= TOTALS.diskMb);
          assert.ok(s.available_cpu_cores >= 0 && s.available_memory_mb >= 0 && s.available_disk_mb >= 0);
          assert.equal(s.reserved_leases, [...model.values()].filter((m) => !m.running).length);
          for (const t of TENANTS) {
            const u = pool.tenantUsage(t);
            const mine = [...model.values()].filter((m) => m.tenant === t);
            assert.equal(
              Math.round(u.cpu_cores * 1000),
              mine.reduce((n, m) => n + m.cpu, 0),
            );
            assert.ok(u.cpu_cores <= QUOTA.maxCpuCores + 1e-9);
            assert.ok(u.memory_mb <= QUOTA.maxMemoryMb);
            assert.ok(u.disk_mb <= QUOTA.maxDiskMb);
          }
          assert.deepEqual(pool.leases().sort(), [...model.keys()].sort());
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("resource pool (examples)", () => {
  const one = (lease: string, cpu: number, mem: number, disk = 0) =>
    specs(lease, [{ cpu_cores: cpu, memory_mb: mem, disk_mb: disk }]);

  it("names the exhausted axis and withholds disk when told to", () => {
    const pool = new ResourcePool({ totals: { cpuCores: 1, memoryMb: 100, diskMb: 100 } });
    assert.equal(pool.allocate(LEASES[0] as string, "t", one(LEASES[0] as string, 2, 1), "running"), "cpu");
    assert.equal(
      pool.allocate(LEASES[0] as string, "t", one(LEASES[0] as string, 1, 200), "running"),
      "memory",
    );
    assert.equal(
      pool.allocate(LEASES[0] as string, "t", one(LEASES[0] as string, 1, 1, 200), "running"),
      "disk",
    );
    const withheld = new ResourcePool({
      totals: { cpuCores: 1, memoryMb: 100, diskMb: 100 },
      diskWithheld: true,
    });
    assert.equal(
      withheld.allocate(LEASES[1] as string, "t", one(LEASES[1] as string, 1, 1, 1), "running"),
      "disk_withheld",
    );
    assert.equal(
      withheld.allocate(LEASES[1] as string, "t", one(LEASES[1] as string, 1, 1, 0), "running"),
      undefined,
    );
    assert.equal(withheld.stats().available_disk_mb, 0);
    assert.equal(withheld.stats().disk_withheld, true);
  });

  it("counts retained disk against new disk-bearing leases and refuses a negative value", () => {
    const pool = new ResourcePool({ totals: { cpuCores: 4, memoryMb: 4096, diskMb: 1000 } });
    assert.equal(pool.setRetainedDisk(900), true);
    assert.equal(pool.setRetainedDisk(-1), false);
    assert.equal(pool.stats().retained_disk_mb, 900);
    assert.equal(
      pool.allocate(LEASES[2] as string, "t", one(LEASES[2] as string, 1, 1, 200), "running"),
      "disk",
    );
    assert.equal(
      pool.allocate(LEASES[2] as string, "t", one(LEASES[2] as string, 1, 1, 100), "running"),
      undefined,
    );
    assert.equal(pool.stats().available_disk_mb, 0);
  });

  it("refuses invalid construction", () => {
    assert.throws(() => new ResourcePool({ totals: { cpuCores: -1, memoryMb: 1, diskMb: 1 } }), RangeError);
    assert.throws(
      () =>
        new ResourcePool({
          totals: { cpuCores: 1, memoryMb: 1, diskMb: 1 },
          quota: { maxCpuCores: 0, maxMemoryMb: 1, maxDiskMb: 1 },
        }),
      RangeError,
    );
  });
});
