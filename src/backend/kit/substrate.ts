import type { Readable, Writable } from "node:stream";
import type { LogEvent, WireLeaseItem } from "../../core/backend-contract/index.ts";
import { FredError } from "../../core/errors.ts";
import type { TerminalSize } from "../../core/exec-channel.ts";

/**
 * The one seam a backend kind implements. The kit owns HTTP, the journal, accounting and
 * callbacks; a substrate only turns a frozen workload description into running things
 * (containers, volumes, networks for Docker; records in memory for the mock) and reports
 * what exists. Every method may be called again after a crash with the same arguments, so
 * each one is idempotent as documented below.
 *
 * Error contract for every method: throw `SubstrateError`.
 * - `outcome: "definite"` — the call is known not to have taken effect beyond what
 *   `removeWorkload` removes (e.g. image missing, start refused). The kit settles the operation
 *   as failed with the error's tenant-safe `reason`/`message`.
 * - `outcome: "ambiguous"` — the effect may or may not have happened (timeout, daemon
 *   gone, lost response). The kit leaves the intent pending and settles it later from
 *   `inventory()`; it never guesses.
 * Any other thrown value is treated as ambiguous. Messages are logged for operators only;
 * tenants see `reason` and `message`, which must not contain host paths or daemon text.
 */

/** A lease item as the chain records it (the backend wire calls the SKU field `sku`). */
export type LeaseItem = WireLeaseItem;

/** Sizing of one instance of a SKU, frozen at admission (renaming a SKU never re-prices a lease). */
export interface SkuProfile {
  cpu_cores: number;
  memory_mb: number;
  disk_mb: number;
}

/** One unit of accounting: a single instance of a service (for Docker, one container). */
export interface InstanceSpec {
  /** Pool allocation key `<lease>-<service>-<index>`. */
  key: string;
  service: string;
  /** 0-based per service. */
  index: number;
  sku: string;
  profile: SkuProfile;
}

/**
 * A parsed manifest, structurally: service name → service spec with at least `image`.
 * Shaped so the typed form of `src/core/manifest` is assignable to it; the kit reads only
 * images (for the registry allowlist), a substrate reads whatever it needs.
 */
export interface ParsedManifest {
  services: Record<string, { image: string } & Record<string, unknown>>;
}

/** Everything a substrate needs to materialise one release of a lease. Immutable. */
export interface WorkloadSpec {
  leaseUuid: string;
  tenant: string;
  providerUuid: string;
  /** The operation (provision) that created this lineage; label it on every resource. */
  operationId: string;
  /** Release version this workload belongs to (1 for the first provision). */
  release: number;
  backendName: string;
  storageId: string;
  items: readonly LeaseItem[];
  /** One entry per instance, services sorted by name, indexes ascending. */
  instances: readonly InstanceSpec[];
  /** Raw payload bytes as uploaded (absent when the lease has none). */
  payload: Uint8Array | undefined;
  /** Parsed payload, when the backend's manifest parser accepted one. */
  manifest: ParsedManifest | undefined;
  /** Milliseconds since the epoch, from the kit's clock. */
  createdAtMs: number;
  /**
   * The release's pinned images, service name → immutable reference (see
   * `Substrate.resolveImages`), once recorded. Absent for a release not resolved yet, or
   * one recorded before pins existed. A substrate creates from these, never the tags.
   */
  images?: Readonly<Record<string, string>>;
}

/** What exists for one lease on the substrate, as observed now. */
export type WorkloadState =
  /** Every instance exists and runs (or passed verification). */
  | "running"
  /** Resources exist but are not all running yet (created, starting, stopped). */
  | "partial"
  /** Something exists and has failed (exited, unhealthy). */
  | "failed";

export interface InstanceObservation {
  service: string;
  index: number;
  /** Substrate-specific state text, e.g. "running", "exited". */
  status: string;
  image?: string;
}

export interface WorkloadObservation {
  leaseUuid: string;
  /** Operation id and release read back from the resources' labels, when present. */
  operationId?: string;
  release?: number;
  state: WorkloadState;
  instances: InstanceObservation[];
  /** Tenant-safe failure reason and message when `state` is "failed". */
  reason?: string;
  message?: string;
}

/** `GET /info` body; the kit serves it verbatim for a ready lease. */
export interface ConnectionInfo {
  host: string;
  fqdn?: string;
  ports?: Record<string, { host_ip: string; host_port: string }>;
  instances?: unknown[];
  services?: Record<string, unknown>;
  protocol?: string;
  metadata?: Record<string, string>;
}

/** An autonomous observation: a running workload died without anyone asking. */
export interface RuntimeEvent {
  leaseUuid: string;
  /** The operation id labelled on the dead resource, to ignore stale generations. */
  operationId?: string;
  reason: string;
  message: string;
  /**
   * True when the substrate knows the platform ended the workload, not the workload
   * itself (e.g. found dead only after the engine was away): it never counts toward the
   * lease's consecutive-failure budget. Absent: judged by `reason`.
   */
  platform?: boolean;
}

/**
 * One retained volume: the data of one instance (service, index) of a closed lease, kept
 * by the substrate under a name of its retained namespace. `bytes` is what the retained
 * copy references on disk (shared extents included), the size every cap and the demote
 * check use.
 */
export interface RetainedVolume {
  name: string;
  service: string;
  index: number;
  bytes: number;
}

/** What `retain` leaves behind, and the identity of the file system holding it. */
export interface RetainedSet {
  volumes: RetainedVolume[];
  /** Identity of the volume root (see `retainedInventory`); undefined when nothing is on disk. */
  fsIdentity: string | undefined;
}

/** A complete listing of the retained namespace, with the identity of the root it was read from. */
export interface RetainedInventory {
  fsIdentity: string;
  names: ReadonlySet<string>;
}

/**
 * One instance's usage as a substrate reads it in a sampler pass (see `sampleUsage`).
 * Counters are cumulative since the instance (container) started; the kit turns CPU time
 * into cores between two samples of the same run (same `startedAtMs`).
 */
export interface InstanceSample {
  service: string;
  index: number;
  cpuUsageSeconds: number;
  cpuThrottledSeconds: number;
  /** The cores the instance may use (its CPU quota); undefined: not limited. */
  cpuLimitCores: number | undefined;
  memoryBytes: number;
  /** undefined: no limit is set. */
  memoryLimitBytes: number | undefined;
  networkRxBytes: number;
  networkTxBytes: number;
  /** From the volume file system's own accounting; undefined: the instance has no volume. */
  diskBytes: number | undefined;
  diskQuotaBytes: number | undefined;
  /** Restarts of this instance since the lease was provisioned (engine restarts and maintenance). */
  restarts: number;
  /** When the running instance started; undefined when it is not running. */
  startedAtMs: number | undefined;
}

export interface Substrate {
  /** Short kind name for logs and metrics, e.g. "docker" or "mock". */
  readonly kind: string;

  /**
   * Checks a spec against substrate-only rules before anything is reserved or created
   * (e.g. images present/pullable policy, VOLUME rules). Throws `SubstrateError` with
   * `validationCode` for a refusal the tenant must see as 400. Must have no side effects.
   */
  validate?(spec: WorkloadSpec, signal: AbortSignal): Promise<void>;

  /**
   * Optional image pinning: resolves every service's image reference (pulling it as the
   * substrate's policy says) and returns service name → an immutable reference to exactly
   * that image. The kit records the result with the release before `create` (provision)
   * or `update` (the next release) and passes it back as `spec.images` on every later call
   * for that release (restart, rollback, recovery), so a moved tag never changes what a
   * release runs. A refusal is a definite SubstrateError (e.g. "ImagePullFailed").
   */
  resolveImages?(spec: WorkloadSpec, signal: AbortSignal): Promise<Record<string, string>>;

  /**
   * Creates every resource of the workload without starting it. Idempotent: resources
   * already present with the same lease, operation and release labels are reused; a
   * resource of the same name from another operation is a definite failure (never adopted).
   */
  create(spec: WorkloadSpec, signal: AbortSignal): Promise<void>;

  /**
   * Starts the created workload and verifies startup (health checks or a grace window).
   * Resolves only when every instance is up. Idempotent: starting a running workload is a
   * no-op. A definite startup failure (exited, unhealthy) throws `outcome: "definite"`.
   */
  start(spec: WorkloadSpec, signal: AbortSignal): Promise<void>;

  /** Stops every instance of the lease, keeping resources. Absent lease = success. */
  stop(leaseUuid: string, signal: AbortSignal): Promise<void>;

  /**
   * Removes the lease's workload: its instances and the networks no longer used, never
   * its volumes or the data in them. What a failed, superseded or interrupted release
   * leaves behind goes this way, so the next release finds the tenant's data in place.
   * Idempotent; an absent lease is success. Before removing, a substrate confirms the
   * resource's labels name this lease and storage id (stale-handle safety).
   */
  removeWorkload(leaseUuid: string, signal: AbortSignal): Promise<void>;

  /**
   * Destroys everything of the lease, volumes and their data included: what a close does,
   * and the only path that deletes volumes. Each volume's ownership (storage id and lease)
   * is confirmed before it is deleted; one of another owner is left alone. Idempotent.
   */
  destroyLease(leaseUuid: string, signal: AbortSignal): Promise<void>;

  /**
   * Retention (optional): `retain`, `destroyRetained` and `adoptRetained` together make a
   * substrate retention-capable; `retainedInventory` adds orphan pruning. The kit owns
   * the retention rows and calls these under the lease's gate; a substrate only moves data.
   *
   * `retain`: the close of a lease that keeps its data. Called after `removeWorkload`;
   * turns every volume of the lease's instances into a retained copy (for btrfs a
   * snapshot, then the live subvolume is deleted) owned by the same lease and storage id,
   * and measures what each copy references. Idempotent: a copy already made is measured
   * again, never made twice; a lease without volumes returns an empty set.
   */
  retain?(leaseUuid: string, instances: readonly InstanceSpec[], signal: AbortSignal): Promise<RetainedSet>;

  /**
   * Deletes the retained copies of `leaseUuid` named in `names` (ownership-checked like
   * `destroyLease`). Absent = done. The only path that deletes retained data.
   */
  destroyRetained?(leaseUuid: string, names: readonly string[], signal: AbortSignal): Promise<void>;

  /**
   * A restore: gives the workload `spec` (a new lease) volumes made from the retained
   * copies of `fromLease`, one per (service, index), limited to the new instance's
   * `disk_mb`. The retained copies stay untouched until the kit destroys them after the
   * restore committed. Idempotent: a volume already adopted is kept.
   */
  adoptRetained?(
    fromLease: string,
    volumes: readonly RetainedVolume[],
    spec: WorkloadSpec,
    signal: AbortSignal,
  ): Promise<void>;

  /**
   * Every retained copy this storage id owns, complete or thrown (ambiguous). The orphan
   * pruner trusts "missing" only when `fsIdentity` equals the one recorded at retain
   * time, so an unmounted or replaced root is never read as "no volumes".
   */
  retainedInventory?(signal: AbortSignal): Promise<RetainedInventory>;

  /** Observes one lease; `undefined` when nothing of it exists. Read-only. */
  inspect(leaseUuid: string, signal: AbortSignal): Promise<WorkloadObservation | undefined>;

  /**
   * Every lease with resources on this substrate (labelled with our storage id). Must be
   * complete: throw (ambiguous) rather than return a partial list, because recovery
   * treats absence from the inventory as proof that nothing exists.
   */
  inventory(signal: AbortSignal): Promise<WorkloadObservation[]>;

  /** Log text per instance key `<service>/<index>`, at most `tail` lines each. */
  logs(leaseUuid: string, tail: number, signal: AbortSignal): Promise<Record<string, string>>;

  /**
   * Optional streaming log read (`GET /logs/{uuid}?follow=true`): the last `tail` lines of
   * each instance, then every new line as it is written, and an instance event whenever an
   * instance's container is replaced (restart, update) before the new container's lines.
   * Must keep following across restarts and updates of the lease; returns (ends) once the
   * lease's workload is gone. Must not buffer without bound: the kit pulls the next event
   * only when the client took the last one. `signal` aborts the read (client gone,
   * shutdown). Without it the kit answers the follow read with 501 `unsupported`.
   */
  followLogs?(leaseUuid: string, tail: number, signal: AbortSignal): AsyncIterable<LogEvent>;

  /** Connection details of a running lease; `undefined` when it is not running. */
  connection(leaseUuid: string, signal: AbortSignal): Promise<ConnectionInfo | undefined>;

  /**
   * Optional maintenance: recreates the lease's workload from the same spec (same
   * release): stop, remove, create, start, verify; volumes kept. Idempotent after a crash:
   * called again with the same spec, it ends running. Without it the kit answers POST
   * /restart with 501 `unsupported`. A definite failure leaves the lease failed
   * (`RestartFailed`); an ambiguous one leaves the command pending and recovery calls
   * this again.
   */
  restart?(spec: WorkloadSpec, signal: AbortSignal): Promise<void>;

  /**
   * Optional maintenance: replaces release `current` by `next` without ever
   * deprovisioning: the current release's resources and volumes stay until `next`
   * verifies. `next.release > current.release` (normally one more; a failed update in
   * between took a version of its own). Definite failure of `next` with `current`
   * restored: throw a definite SubstrateError (reason "UpdateFailed"); the kit records the
   * failed release and the lease stays ready on `current`. Effects unknown (engine gone,
   * timeout, compensation unsure): ambiguous; the kit keeps the command pending and calls
   * update(current, next) again after a restart or in recovery. A re-call drives to a
   * definite end from whatever exists (next fully running and verified: resolve;
   * partial: roll back or finish, never guess, never leave two releases running).
   * Without it the kit answers POST /update with 501 `unsupported`.
   */
  update?(current: WorkloadSpec, next: WorkloadSpec, signal: AbortSignal): Promise<void>;

  /**
   * Optional: applies the custom domains the chain holds for a lease's items (POST
   * /reconcile_custom_domain). Idempotent and cheap when nothing changed (providerd calls it
   * every sweep); resolves once the change is in effect. Without it the call is a no-op.
   */
  reconcileCustomDomains?(leaseUuid: string, items: readonly LeaseItem[], signal: AbortSignal): Promise<void>;

  /**
   * Optional supervision: the kit subscribes once after recovery; the substrate calls the
   * listener when a running workload dies. Returns an unsubscribe function.
   */
  subscribe?(listener: (event: RuntimeEvent) => void): () => void;

  /**
   * Optional usage sampling: one pass over every lease with running instances, keyed by
   * lease UUID (a lease without a running instance may be left out). Called by the kit's
   * sampler every `usage_sample_interval`, never concurrently; it must stay cheap for
   * thousands of leases (read counters in bulk, not one engine call per instance). Without
   * it the kit answers GET /usage/{uuid} with 501 `unsupported`.
   */
  sampleUsage?(signal: AbortSignal): Promise<Map<string, InstanceSample[]>>;

  /**
   * Optional: what is wrong with the substrate right now (its engine does not answer…),
   * or undefined when it is usable. `GET /health` answers 503 (without this text, which
   * only reaches the log).
   */
  health?(signal: AbortSignal): Promise<string | undefined>;

  /**
   * Optional: starts `req.argv` inside one running instance of the lease, with the
   * instance's own user, limits and namespaces (a shell session, GET /shell/{uuid}).
   * Resolves once the command runs; the kit relays its streams and calls `kill` when the
   * session ends for any reason. Throws `ExecTargetMissing` when the service or instance
   * does not exist (404). Without it the kit answers the route with 501 `unsupported`.
   */
  exec?(leaseUuid: string, req: ExecRequest, signal: AbortSignal): Promise<ExecSession>;

  /** Releases clients and watchers. Called once, after the kit stopped calling in. */
  close(): Promise<void>;
}

/** Which instance a shell session runs in, and what it runs. */
export interface ExecRequest {
  service: string;
  instance: number;
  tty: boolean;
  argv: readonly string[];
}

/**
 * A command started by `Substrate.exec`. Streams keep Node's backpressure: the kit stops
 * reading stdout/stderr while its client is behind, and waits for stdin's drain.
 */
export interface ExecSession {
  /** The command's stdin; `end()` closes it (the client's half-close). */
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** Undefined with a TTY: a terminal has one output stream. */
  readonly stderr: Readable | undefined;
  /** Sets the terminal's size (TTY sessions; ignored otherwise). */
  resize(size: TerminalSize): void;
  /** The exit code, once the command ended and its output was read to the end. */
  readonly exit: Promise<number>;
  /**
   * Ends the command and everything it started, resolving once nothing of it runs.
   * Idempotent; called at the end of every session, even after a normal exit.
   */
  kill(): Promise<void>;
}

/** The service or instance a shell session names does not exist in the lease. */
export class ExecTargetMissing extends Error {
  constructor(message = "unknown service or instance") {
    super(message);
    this.name = "ExecTargetMissing";
  }
}

export type SubstrateOutcome = "definite" | "ambiguous";

/** The only error type a substrate throws on purpose; see the contract at the top. */
export class SubstrateError extends FredError {
  readonly outcome: SubstrateOutcome;
  /** Tenant-safe failure reason code, e.g. "ContainerExited", "ImagePullFailed". */
  readonly reason: string;
  /** Tenant-safe message (also the callback `error`). */
  readonly tenantMessage: string;
  /** Set for pre-admission refusals served as 400 `validation_code`. */
  readonly validationCode: "invalid_manifest" | "image_not_allowed" | "unknown_sku" | undefined;
  /**
   * An update that rolled back ("UpdateFailed"): the failed attempt's last log lines by
   * `<service>/<instance>`, read before its containers were removed. The kit keeps them
   * with the failure and serves them as `failed/<service>/<instance>` beside the live logs.
   */
  readonly logs: Readonly<Record<string, string>> | undefined;

  constructor(
    outcome: SubstrateOutcome,
    reason: string,
    tenantMessage: string,
    opts: {
      cause?: unknown;
      operatorMessage?: string;
      validationCode?: SubstrateError["validationCode"];
      logs?: Readonly<Record<string, string>>;
    } = {},
  ) {
    super(
      outcome === "definite" ? "ERR_SUBSTRATE_FAILED" : "ERR_SUBSTRATE_AMBIGUOUS",
      opts.operatorMessage ?? tenantMessage,
      { retryable: outcome === "ambiguous", cause: opts.cause },
    );
    this.name = "SubstrateError";
    this.outcome = outcome;
    this.reason = reason;
    this.tenantMessage = tenantMessage;
    this.validationCode = opts.validationCode;
    this.logs = opts.logs;
  }
}

/** Classifies anything a substrate threw: only an explicit definite SubstrateError is definite. */
export function substrateOutcomeOf(err: unknown): SubstrateOutcome {
  return err instanceof SubstrateError ? err.outcome : "ambiguous";
}
