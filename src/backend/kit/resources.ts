import type { InstanceSpec } from "./substrate.ts";

/**
 * The resource pool: capacity books kept in memory and rebuilt from the journal at start
 * (the journal's frozen SKU profiles are the authority). The unit is one instance; a
 * lease's instances are allocated all-or-nothing. CPU is kept in millicores so repeated
 * add/subtract never drifts. A reservation (admitted, not yet running) carries an expiry
 * so a crash or a hung substrate call can never leak capacity.
 */
export interface PoolTotals {
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
}

export interface TenantQuota {
  maxCpuCores: number;
  maxMemoryMb: number;
  maxDiskMb: number;
}

export interface PoolOptions {
  totals: PoolTotals;
  quota?: TenantQuota;
  /** Disk accounting cannot be trusted (e.g. no quota-capable filesystem): refuse disk-bearing leases. */
  diskWithheld?: boolean;
}

export type AllocationState = "reserved" | "running";

interface Usage {
  milliCpu: number;
  memoryMb: number;
  diskMb: number;
}

interface LeaseAllocation {
  tenant: string;
  state: AllocationState;
  /** Reservation deadline (ms since epoch); meaningful while reserved. */
  expiresAtMs: number;
  instances: Map<string, Usage>;
  total: Usage;
}

export type RefusalReason = "cpu" | "memory" | "disk" | "quota" | "disk_withheld" | "duplicate";

export interface PoolStats {
  total_cpu_cores: number;
  total_memory_mb: number;
  total_disk_mb: number;
  allocated_cpu_cores: number;
  allocated_memory_mb: number;
  allocated_disk_mb: number;
  available_cpu_cores: number;
  available_memory_mb: number;
  available_disk_mb: number;
  retained_disk_mb: number;
  active_containers: number;
  reserved_leases: number;
  disk_withheld: boolean;
}

const toMilli = (cores: number) => Math.round(cores * 1000);
const zero = (): Usage => ({ milliCpu: 0, memoryMb: 0, diskMb: 0 });

function usageOf(instances: readonly InstanceSpec[]): { per: Map<string, Usage>; total: Usage } {
  const per = new Map<string, Usage>();
  const total = zero();
  for (const i of instances) {
    const u = {
      milliCpu: toMilli(i.profile.cpu_cores),
      memoryMb: i.profile.memory_mb,
      diskMb: i.profile.disk_mb,
    };
    per.set(i.key, u);
    total.milliCpu += u.milliCpu;
    total.memoryMb += u.memoryMb;
    total.diskMb += u.diskMb;
  }
  return { per, total };
}

export class ResourcePool {
  readonly #totals: Usage;
  readonly #quota: Usage | undefined;
  readonly #diskWithheld: boolean;
  readonly #leases = new Map<string, LeaseAllocation>();
  readonly #tenants = new Map<string, Usage>();
  readonly #allocated = zero();
  #retainedDiskMb = 0;
  #instanceCount = 0;

  constructor(opts: PoolOptions) {
    const t = opts.totals;
    if (!(t.cpuCores >= 0 && t.memoryMb >= 0 && t.diskMb >= 0))
      throw new RangeError("pool totals must be ≥ 0");
    this.#totals = { milliCpu: toMilli(t.cpuCores), memoryMb: t.memoryMb, diskMb: t.diskMb };
    if (opts.quota) {
      const q = opts.quota;
      if (!(q.maxCpuCores > 0 && q.maxMemoryMb > 0 && q.maxDiskMb > 0)) {
        throw new RangeError("tenant quota values must all be positive");
      }
      this.#quota = { milliCpu: toMilli(q.maxCpuCores), memoryMb: q.maxMemoryMb, diskMb: q.maxDiskMb };
    }
    this.#diskWithheld = opts.diskWithheld ?? false;
  }

  /** Checks without changing anything; returns why a lease would be refused, or undefined. */
  check(lease: string, tenant: string, instances: readonly InstanceSpec[]): RefusalReason | undefined {
    if (this.#leases.has(lease)) return "duplicate";
    const { total } = usageOf(instances);
    if (this.#diskWithheld && total.diskMb > 0) return "disk_withheld";
    const a = this.#allocated;
    if (a.milliCpu + total.milliCpu > this.#totals.milliCpu) return "cpu";
    if (a.memoryMb + total.memoryMb > this.#totals.memoryMb) return "memory";
    if (total.diskMb > 0 && a.diskMb + this.#retainedDiskMb + total.diskMb > this.#totals.diskMb)
      return "disk";
    if (this.#quota && tenant !== "") {
      const u = this.#tenants.get(tenant) ?? zero();
      const q = this.#quota;
      if (
        u.milliCpu + total.milliCpu > q.milliCpu ||
        u.memoryMb + total.memoryMb > q.memoryMb ||
        u.diskMb + total.diskMb > q.diskMb
      ) {
        return "quota";
      }
    }
    return undefined;
  }

  /** All-or-nothing allocation of a lease's instances; returns the refusal or undefined on success. */
  allocate(
    lease: string,
    tenant: string,
    instances: readonly InstanceSpec[],
    state: AllocationState,
    expiresAtMs = Number.POSITIVE_INFINITY,
  ): RefusalReason | undefined {
    const refusal = this.check(lease, tenant, instances);
    if (refusal !== undefined) return refusal;
    const { per, total } = usageOf(instances);
    this.#leases.set(lease, { tenant, state, expiresAtMs, instances: per, total });
    this.#add(tenant, total, 1);
    this.#instanceCount += per.size;
    return undefined;
  }

  /** A reservation became a running allocation: it no longer expires. */
  markRunning(lease: string): boolean {
    const a = this.#leases.get(lease);
    if (!a) return false;
    a.state = "running";
    a.expiresAtMs = Number.POSITIVE_INFINITY;
    return true;
  }

  /** Idempotent; unknown leases are accepted. */
  release(lease: string): void {
    const a = this.#leases.get(lease);
    if (!a) return;
    this.#leases.delete(lease);
    this.#add(a.tenant, a.total, -1);
    this.#instanceCount -= a.instances.size;
  }

  /** Releases every reservation whose deadline has passed; returns their lease UUIDs. */
  expireReservations(nowMs: number): string[] {
    const expired: string[] = [];
    for (const [lease, a] of this.#leases) {
      if (a.state === "reserved" && a.expiresAtMs <= nowMs) expired.push(lease);
    }
    for (const lease of expired) this.release(lease);
    return expired;
  }

  /** Disk held by retained volumes (pushed in by the owner); a negative value is refused. */
  setRetainedDisk(mb: number): boolean {
    if (!(Number.isFinite(mb) && mb >= 0)) return false;
    this.#retainedDiskMb = mb;
    return true;
  }

  has(lease: string): boolean {
    return this.#leases.has(lease);
  }

  stateOf(lease: string): AllocationState | undefined {
    return this.#leases.get(lease)?.state;
  }

  leases(): string[] {
    return [...this.#leases.keys()];
  }

  tenantUsage(tenant: string): { cpu_cores: number; memory_mb: number; disk_mb: number } {
    const u = this.#tenants.get(tenant) ?? zero();
    return { cpu_cores: u.milliCpu / 1000, memory_mb: u.memoryMb, disk_mb: u.diskMb };
  }

  stats(): PoolStats {
    const t = this.#totals;
    const a = this.#allocated;
    const availableDisk = this.#diskWithheld ? 0 : Math.max(0, t.diskMb - a.diskMb - this.#retainedDiskMb);
    let reserved = 0;
    for (const l of this.#leases.values()) if (l.state === "reserved") reserved++;
    return {
      total_cpu_cores: t.milliCpu / 1000,
      total_memory_mb: t.memoryMb,
      total_disk_mb: t.diskMb,
      allocated_cpu_cores: a.milliCpu / 1000,
      allocated_memory_mb: a.memoryMb,
      allocated_disk_mb: a.diskMb,
      available_cpu_cores: Math.max(0, t.milliCpu - a.milliCpu) / 1000,
      available_memory_mb: Math.max(0, t.memoryMb - a.memoryMb),
      available_disk_mb: availableDisk,
      retained_disk_mb: this.#retainedDiskMb,
      active_containers: this.#instanceCount,
      reserved_leases: reserved,
      disk_withheld: this.#diskWithheld,
    };
  }

  #add(tenant: string, u: Usage, sign: 1 | -1): void {
    this.#allocated.milliCpu += sign * u.milliCpu;
    this.#allocated.memoryMb += sign * u.memoryMb;
    this.#allocated.diskMb += sign * u.diskMb;
    const t = this.#tenants.get(tenant) ?? zero();
    t.milliCpu += sign * u.milliCpu;
    t.memoryMb += sign * u.memoryMb;
    t.diskMb += sign * u.diskMb;
    if (t.milliCpu === 0 && t.memoryMb === 0 && t.diskMb === 0) this.#tenants.delete(tenant);
    else this.#tenants.set(tenant, t);
  }
}
