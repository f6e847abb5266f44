import { createHash } from "node:crypto";
import type Database from "better-sqlite3";
import type { LogEvent, LogLineEvent } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import { openDatabase, type SqliteDatabase } from "../../sqlite/index.ts";
import {
  type ConnectionInfo,
  type ExecRequest,
  type ExecSession,
  ExecTargetMissing,
  type InstanceSpec,
  type RetainedSet,
  type RetainedVolume,
  type SkuProfile,
  type Substrate,
  SubstrateError,
  type WorkloadObservation,
  type WorkloadSpec,
} from "../kit/index.ts";
import { DEFAULT_MOCK_PROFILE } from "./config.ts";
import { mockExec } from "./exec.ts";
import { MockLogFeed } from "./log-feed.ts";
import { type MockRunningWorkload, MockUsage, type UsageDrive } from "./usage.ts";

/**
 * The mock backend's fake substrate: a workload is a record, not a process. Everything
 * around it (journal, outbox, accounting) is the real kit. Connection details derive from
 * the lease UUID so they are stable across restarts. With a state file the records
 * survive a crash, which lets crash tests observe real recovery; failure injection makes
 * chosen leases (or a random share) fail definitely or hang until aborted.
 */
export interface MockSubstrateOptions {
  clock: Clock;
  backendName: string;
  /** Simulated provisioning time (MOCK_BACKEND_DELAY). */
  delayMs: number;
  /** Share of provisions that fail at start, 0..1. */
  failRate: number;
  failLeases: ReadonlySet<string>;
  /** Leases whose start never completes until aborted (an ambiguous outcome). */
  hangLeases: ReadonlySet<string>;
  /**
   * Retention: what each retained instance's fake volume measures, in MiB (the
   * `/_mock/retained-size` route overrides it per lease), and the leases whose retention
   * calls (retain, destroyRetained; adoptRetained by destination) hang until aborted.
   */
  retainedDiskMb?: number;
  hangRetention?: ReadonlySet<string>;
  /** SQLite file keeping the fake workloads across restarts; in memory when undefined. */
  statePath?: string;
  /** SKU UUID → profile; undefined = every SKU gets DEFAULT_MOCK_PROFILE. */
  skus?: Readonly<Record<string, SkuProfile>> | undefined;
  random?: () => number;
  /** False: no `sampleUsage` (GET /usage answers 501, as on a backend that cannot sample). Default true. */
  usage?: boolean;
  /** While a lease's logs are followed, each instance writes a line this often (0: never; default 1 s). */
  logIntervalMs?: number;
}

type MockState = "created" | "running" | "stopped" | "failed";

interface MockWorkload {
  operationId: string;
  release: number;
  tenant: string;
  state: MockState;
  instances: { service: string; index: number; sku: string }[];
  /** How many restarts and updates ran to completion on this workload (absent in older state files). */
  maintenance?: number;
  /** When it last became running (its usage counters start there). */
  startedAtMs?: number;
}

/**
 * An update whose manifest names an image tagged `fail` (e.g. `localhost/app:fail`) is
 * the mock's "bad manifest": the new release never starts and the current one stays.
 */
export const FAILING_IMAGE_TAG = "fail";

/** An update to an image tagged `fail-rollback` fails, and so does restoring the current release. */
export const ROLLBACK_FAILING_IMAGE_TAG = "fail-rollback";

function namesFailingImage(spec: WorkloadSpec, tag = FAILING_IMAGE_TAG): boolean {
  return Object.values(spec.manifest?.services ?? {}).some((svc) =>
    svc.image.replace(/@.*$/, "").endsWith(`:${tag}`),
  );
}

export class MockSubstrate implements Substrate {
  readonly kind = "mock";
  readonly #options: MockSubstrateOptions;
  readonly #database: SqliteDatabase;
  readonly #put: Database.Statement;
  readonly #del: Database.Statement;
  readonly #workloads = new Map<string, MockWorkload>();
  readonly #retainedMb = new Map<string, number>();
  readonly #usage: MockUsage;
  /** Present unless `usage: false`: the mock stands in for a backend without sampling then. */
  readonly sampleUsage: Substrate["sampleUsage"];
  readonly #logFeed: MockLogFeed;

  constructor(opts: MockSubstrateOptions) {
    this.#options = opts;
    this.#usage = new MockUsage(opts.clock, (sku) => this.resolveSku(sku));
    this.sampleUsage = opts.usage === false ? undefined : async () => this.#usage.sample(this.#running());
    this.#logFeed = new MockLogFeed({
      clock: opts.clock,
      intervalMs: opts.logIntervalMs ?? 1_000,
      instances: (lease) => this.#workloads.get(lease)?.instances,
    });
    // A fake substrate: a record only has to survive a process crash, so the records written
    // in one event-loop turn (a burst's creates and starts) share one commit at the turn's
    // end, as the journal's writes do (group commit), instead of a commit each: at two
    // records per provision those commits were a tenth of a mock backend's CPU in a burst.
    // Nothing waits on the fsync; it is asked for only so the WAL is checkpointed. Older
    // state files hold the table without a schema version, hence IF NOT EXISTS.
    this.#database = openDatabase({
      path: opts.statePath ?? ":memory:",
      migrations: ["CREATE TABLE IF NOT EXISTS workloads (lease_uuid TEXT PRIMARY KEY, doc TEXT NOT NULL)"],
      durability: "group-commit",
      label: "mock substrate state",
    });
    const db = this.#database.db;
    this.#put = db.prepare("INSERT OR REPLACE INTO workloads (lease_uuid, doc) VALUES (?, ?)");
    this.#del = db.prepare("DELETE FROM workloads WHERE lease_uuid = ?");
    for (const row of db.prepare("SELECT lease_uuid, doc FROM workloads").all() as {
      lease_uuid: string;
      doc: string;
    }[]) {
      this.#workloads.set(row.lease_uuid, JSON.parse(row.doc) as MockWorkload);
    }
  }

  /** The kit's `resolveSku`: the profile of the SKUs this fake machine offers. */
  resolveSku(sku: string): SkuProfile | undefined {
    const skus = this.#options.skus;
    return skus === undefined ? DEFAULT_MOCK_PROFILE : skus[sku];
  }

  #save(lease: string, next: MockWorkload): void {
    const prev = this.#workloads.get(lease);
    const restarted =
      prev?.state !== "running" || prev.release !== next.release || prev.maintenance !== next.maintenance;
    const w: MockWorkload =
      next.state !== "running"
        ? { ...next, startedAtMs: undefined }
        : restarted || next.startedAtMs === undefined
          ? { ...next, startedAtMs: this.#options.clock.now() }
          : next;
    this.#workloads.set(lease, w);
    this.#persist(() => this.#put.run(lease, JSON.stringify(w)));
  }

  /** One record's write, committed with the rest of the turn's (see the constructor). */
  #persist(write: () => unknown): void {
    this.#database.writeStatement(write);
    this.#database.durable().catch(() => {});
  }

  async create(spec: WorkloadSpec, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const existing = this.#workloads.get(spec.leaseUuid);
    if (existing && existing.operationId === spec.operationId && existing.release === spec.release) return;
    if (existing) {
      throw new SubstrateError("definite", "Internal", "workload of another operation exists", {
        operatorMessage: `mock workload ${spec.leaseUuid} belongs to operation ${existing.operationId}`,
      });
    }
    this.#save(spec.leaseUuid, this.#fresh(spec));
  }

  async start(spec: WorkloadSpec, signal: AbortSignal): Promise<void> {
    const w = this.#workloads.get(spec.leaseUuid);
    if (!w) throw new SubstrateError("definite", "Internal", "workload was not created");
    if (w.state === "running") return;
    if (await this.#injected(spec.leaseUuid, signal)) {
      this.#save(spec.leaseUuid, { ...w, state: "failed" });
      throw new SubstrateError("definite", "ContainerExited", "workload exited during startup", {
        operatorMessage: "mock failure injected",
      });
    }
    this.#save(spec.leaseUuid, { ...w, state: "running" });
  }

  /**
   * The injection every start-like step honours: a hang lease waits until aborted (an
   * ambiguous outcome), then the simulated delay, then true when this step must fail.
   */
  async #injected(leaseUuid: string, signal: AbortSignal): Promise<boolean> {
    if (this.#options.hangLeases.has(leaseUuid)) {
      // Never completes on its own: the caller's abort (close, expiry, shutdown) ends it.
      await this.#options.clock.sleep(2 ** 31 - 1, signal);
    }
    if (this.#options.delayMs > 0) await this.#options.clock.sleep(this.#options.delayMs, signal);
    return (
      this.#options.failLeases.has(leaseUuid) ||
      (this.#options.random ?? Math.random)() < this.#options.failRate
    );
  }

  /** Recreates the workload of the same release; missing (lost) is recreated too. */
  async restart(spec: WorkloadSpec, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const w = this.#workloads.get(spec.leaseUuid) ?? this.#fresh(spec);
    this.#save(spec.leaseUuid, { ...w, state: "stopped" });
    if (await this.#injected(spec.leaseUuid, signal)) {
      this.#save(spec.leaseUuid, { ...w, state: "failed" });
      throw new SubstrateError("definite", "RestartFailed", "workload exited during restart", {
        operatorMessage: "mock failure injected",
      });
    }
    this.#save(spec.leaseUuid, { ...w, state: "running", maintenance: (w.maintenance ?? 0) + 1 });
    this.#logFeed.changed(spec.leaseUuid, "restarted");
  }

  /**
   * Replaces the current release by `next`; on an injected failure the current one keeps
   * running (a completed rollback). Called again after `next` is in place, it is done.
   */
  async update(current: WorkloadSpec, next: WorkloadSpec, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const w = this.#workloads.get(current.leaseUuid) ?? this.#fresh(current);
    if (w.release === next.release && w.state === "running") return;
    if (namesFailingImage(next, ROLLBACK_FAILING_IMAGE_TAG)) {
      this.#save(current.leaseUuid, { ...w, release: current.release, state: "failed" });
      throw new SubstrateError("definite", "ContainerExited", "workload exited during startup", {
        operatorMessage: "mock rollback failure injected",
      });
    }
    if ((await this.#injected(current.leaseUuid, signal)) || namesFailingImage(next)) {
      this.#save(current.leaseUuid, { ...w, release: current.release, state: "running" });
      // What the failed attempt printed, as the Docker backend reads it before removing it.
      const logs = Object.fromEntries(
        next.instances.map((i) => [
          `${i.service}/${i.index}`,
          `mock ${i.service}/${i.index} release ${next.release} failed to start\n`,
        ]),
      );
      throw new SubstrateError("definite", "UpdateFailed", "the new release failed to start; rolled back", {
        operatorMessage: "mock update failure injected",
        logs,
      });
    }
    this.#save(current.leaseUuid, {
      ...w,
      release: next.release,
      state: "running",
      maintenance: (w.maintenance ?? 0) + 1,
    });
    this.#logFeed.changed(current.leaseUuid, "replaced");
  }

  #fresh(spec: WorkloadSpec): MockWorkload {
    return {
      operationId: spec.operationId,
      release: spec.release,
      tenant: spec.tenant,
      state: "created",
      instances: spec.instances.map((i) => ({ service: i.service, index: i.index, sku: i.sku })),
    };
  }

  async stop(leaseUuid: string): Promise<void> {
    const w = this.#workloads.get(leaseUuid);
    if (w && w.state !== "failed") this.#save(leaseUuid, { ...w, state: "stopped" });
  }

  /** A fake workload has no volumes: removing it and destroying the lease are the same. */
  async removeWorkload(leaseUuid: string): Promise<void> {
    this.#forget(leaseUuid);
  }

  #forget(leaseUuid: string): void {
    this.#workloads.delete(leaseUuid);
    this.#persist(() => this.#del.run(leaseUuid));
    this.#logFeed.ended(leaseUuid);
  }

  destroyLease(leaseUuid: string): Promise<void> {
    return this.removeWorkload(leaseUuid);
  }

  /**
   * Retention without volumes: the kit's journal holds the rows, the mock only reports a
   * fake volume per disk-bearing instance, sized by `retainedDiskMb` or the per-lease
   * override, so caps and the demote fit can be exercised.
   */
  async retain(
    leaseUuid: string,
    instances: readonly InstanceSpec[],
    signal: AbortSignal,
  ): Promise<RetainedSet> {
    await this.#maybeHang(leaseUuid, signal);
    this.#forget(leaseUuid);
    const mb = this.#retainedMb.get(leaseUuid) ?? this.#options.retainedDiskMb ?? 0;
    const volumes: RetainedVolume[] = instances
      .filter((i) => i.profile.disk_mb > 0)
      .map((i) => ({
        name: `mock-retained-${leaseUuid}-${i.service}-${i.index}`,
        service: i.service,
        index: i.index,
        bytes: mb * 1024 * 1024,
      }));
    return { volumes, fsIdentity: volumes.length > 0 ? "mock" : undefined };
  }

  async destroyRetained(leaseUuid: string, _names: readonly string[], signal: AbortSignal): Promise<void> {
    await this.#maybeHang(leaseUuid, signal);
  }

  async adoptRetained(
    _from: string,
    _volumes: readonly RetainedVolume[],
    spec: WorkloadSpec,
    signal: AbortSignal,
  ): Promise<void> {
    await this.#maybeHang(spec.leaseUuid, signal);
  }

  /** Test drive: a lease's CPU demand or extra disk bytes (the `/_mock/usage` route). */
  driveUsage(leaseUuid: string, drive: UsageDrive): boolean {
    if (this.#workloads.get(leaseUuid)?.state !== "running") return false;
    this.#usage.drive(leaseUuid, drive);
    return true;
  }

  #running(): MockRunningWorkload[] {
    const out: MockRunningWorkload[] = [];
    for (const [leaseUuid, w] of this.#workloads) {
      if (w.state !== "running" || w.startedAtMs === undefined) continue;
      out.push({
        leaseUuid,
        instances: w.instances,
        startedAtMs: w.startedAtMs,
        restarts: w.maintenance ?? 0,
      });
    }
    return out;
  }

  /** Failure injection: what the lease's fake volumes will measure when it is retained. */
  setRetainedSize(leaseUuid: string, mb: number): void {
    this.#retainedMb.set(leaseUuid, mb);
  }

  async #maybeHang(leaseUuid: string, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.#options.hangRetention?.has(leaseUuid)) await this.#options.clock.sleep(2 ** 31 - 1, signal);
  }

  /**
   * Failure injection: the lease's workload vanishes behind the kit's back, the way a
   * crashed host loses its containers. False when nothing of it exists.
   */
  lose(leaseUuid: string): boolean {
    if (!this.#workloads.has(leaseUuid)) return false;
    this.#forget(leaseUuid);
    return true;
  }

  async inspect(leaseUuid: string): Promise<WorkloadObservation | undefined> {
    const w = this.#workloads.get(leaseUuid);
    return w === undefined ? undefined : observe(leaseUuid, w);
  }

  async inventory(): Promise<WorkloadObservation[]> {
    return [...this.#workloads].map(([lease, w]) => observe(lease, w));
  }

  async logs(leaseUuid: string, tail: number): Promise<Record<string, string>> {
    const w = this.#workloads.get(leaseUuid);
    const out: Record<string, string> = {};
    for (const i of w?.instances ?? []) {
      const lines = [`mock ${i.service}/${i.index} started`, `state ${w?.state}`];
      if (w?.maintenance !== undefined)
        lines.push(`release ${w.release} after ${w.maintenance} restarts/updates`);
      out[`${i.service}/${i.index}`] = lines
        .slice(Math.max(0, lines.length - tail))
        .map((l) => `${l}\n`)
        .join("");
    }
    return out;
  }

  followLogs(leaseUuid: string, tail: number, signal: AbortSignal): AsyncIterable<LogEvent> {
    return this.#logFeed.follow(leaseUuid, tail, signal);
  }

  /** Failure injection: the lease's instances write these lines now; false when it has no workload. */
  writeLogs(leaseUuid: string, lines: readonly Omit<LogLineEvent, "ts">[]): boolean {
    if (!this.#workloads.has(leaseUuid)) return false;
    this.#logFeed.write(leaseUuid, lines);
    return true;
  }

  /** The lease's instances as (service, index), or undefined when it has no workload. */
  instancesOf(leaseUuid: string): readonly { service: string; index: number }[] | undefined {
    return this.#workloads.get(leaseUuid)?.instances;
  }

  /** Shell sessions whose command still runs (tests read it to prove none leaks). */
  readonly execSessions = new Set<ExecSession>();

  async exec(leaseUuid: string, req: ExecRequest): Promise<ExecSession> {
    const w = this.#workloads.get(leaseUuid);
    if (!w?.instances.some((i) => i.service === req.service && i.index === req.instance)) {
      throw new ExecTargetMissing();
    }
    return mockExec(req, this.execSessions);
  }

  async connection(leaseUuid: string): Promise<ConnectionInfo | undefined> {
    const w = this.#workloads.get(leaseUuid);
    if (w?.state !== "running") return undefined;
    const digest = createHash("sha256").update(leaseUuid).digest();
    const host = `mock-${digest.subarray(0, 4).toString("hex")}.example.com`;
    return {
      host,
      ports: { "443/tcp": { host_ip: "0.0.0.0", host_port: "443" } },
      protocol: "https",
      instances: w.instances.map((i) => ({ service: i.service, instance_index: i.index, status: "running" })),
      metadata: {
        backend: this.#options.backendName,
        lease_uuid: leaseUuid,
        tenant: w.tenant,
        sku: w.instances[0]?.sku ?? "",
        token: digest.subarray(4, 20).toString("hex"),
      },
    };
  }

  async close(): Promise<void> {
    this.#database.close();
  }
}

function observe(leaseUuid: string, w: MockWorkload): WorkloadObservation {
  const state = w.state === "running" ? "running" : w.state === "failed" ? "failed" : "partial";
  const obs: WorkloadObservation = {
    leaseUuid,
    operationId: w.operationId,
    release: w.release,
    state,
    instances: w.instances.map((i) => ({ service: i.service, index: i.index, status: w.state })),
  };
  if (state === "failed") {
    obs.reason = "ContainerExited";
    obs.message = "workload exited";
  }
  return obs;
}
