import type { ChainLease, ChainPort } from "../../chain/port.ts";
import { buildCallbackUrl } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { contractItems, isBillingOnly, leaseEnded, payloadAccepted } from "../../core/lease-rules.ts";
import type { PayloadSource, ProvisionTarget } from "../../core/reconcile/index.ts";
import { newUuidV4 } from "../../core/uuid.ts";
import { failpoint } from "../../failpoints.ts";
import type { ProvisionRequest } from "../backend-client/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import { type Attempt, type Placement, type StoredPayload, sha256Hex } from "../store/index.ts";
import type { LifecycleDeps } from "./deps.ts";
import { rejectionForRefusal } from "./reasons.ts";

/**
 * The provision workflow for one lease, always run inside that lease's serial queue. One
 * entry point, `provision`, serves the event path (a new PENDING lease) and the reconciler's
 * sweep (a lease whose workload its owner lost or that failed, on a target the plan chose):
 * not recorded yet? → the lease (as read, or re-read) → new lease: PENDING? billing-only?
 * acknowledge → payload acceptable? else wait → route or take the target → commit the attempt (write-ahead, group commit) → POST provision → act on
 * what the answer proves. `redeliver` re-sends an unresolved attempt with its original
 * operation id.
 */
export type ProvisionStep =
  | "not-pending"
  | "billing-only"
  | "awaiting-payload"
  | "unroutable"
  | "already-recorded"
  | "sent"
  | "refused"
  | "ambiguous";

/** What asks for a provision, and on which terms. */
export interface ProvisionOrder {
  /** The lease as already read (skips the chain re-read). */
  lease?: ChainLease | undefined;
  /**
   * The reconciler's target: the lease's own backend, or the backends its plan allows.
   * Absent: a new PENDING lease from the event path, routed freely.
   */
  target?: ProvisionTarget;
  /** A new release for an ACTIVE lease whose workload failed on its confirmed owner. */
  reprovision?: boolean;
  /** Where the payload comes from (default: the stored upload when the lease has a meta_hash). */
  payload?: PayloadSource;
}

/** What provision and restore requests for `attempt` share: the lease, its items, its callback URLs. */
export function leaseRequest(config: ProviderConfig, lease: ChainLease, attempt: Attempt): ProvisionRequest {
  return {
    leaseUuid: lease.uuid,
    tenant: lease.tenant,
    providerUuid: config.providerUuid,
    items: contractItems(lease.items),
    callbackUrl: buildCallbackUrl(config.callbackBase, "operation_id", attempt.operationId),
    lifecycleCallbackUrl: buildCallbackUrl(config.callbackBase, "lifecycle_id", attempt.operationId),
  };
}

export class Provisioner {
  readonly #deps: LifecycleDeps;
  /** Leases whose provision request is on the wire right now. */
  readonly inFlight = new Set<string>();
  /** Operation ids already reported overdue (kept only while they stay overdue). */
  readonly overdue = new Set<string>();

  readonly leases: ProvisionLeaseReads;

  constructor(deps: LifecycleDeps) {
    this.#deps = deps;
    this.leases = new ProvisionLeaseReads(deps.chain, deps.config.providerUuid, deps.clock);
  }

  /** Call inside the lease's serial queue. */
  async provision(
    leaseUuid: string,
    signal: AbortSignal,
    order: ProvisionOrder = {},
  ): Promise<ProvisionStep> {
    const { store, config, acks } = this.#deps;
    const { target } = order;
    if (store.attemptFor(leaseUuid) !== undefined || this.inFlight.has(leaseUuid)) return "already-recorded";
    if (!placementAdmits(store.placement(leaseUuid), target, order.reprovision === true)) {
      return "already-recorded";
    }
    const lease = order.lease ?? (await this.leases.get(leaseUuid));
    if (lease === undefined) {
      // The event told us it exists; an RPC node that has not caught up yet is retried.
      throw new FredError("ERR_LEASE_NOT_VISIBLE", `lease ${leaseUuid} is not visible on chain yet`, {
        retryable: true,
      });
    }
    if (target === undefined) {
      // New work from the event path; anything past PENDING is the sweep's to judge.
      if (lease.state !== "LEASE_STATE_PENDING") return "not-pending";
      if (
        isBillingOnly(
          lease.items.map((i) => i.skuUuid),
          config.billingOnlySkus,
        )
      ) {
        acks.acknowledge(leaseUuid);
        return "billing-only";
      }
    }
    const source = order.payload ?? (lease.metaHash === "" ? "none" : "stored");
    const owner = target !== undefined && "backend" in target ? target.backend : undefined;
    const payload = await choosePayload(this.#deps, lease, source, owner, signal);
    if (payload === "missing") return "awaiting-payload";
    // Routed and stamped now: the choice sees the backends' load as it is. How many
    // provisions are on the wire at once is bounded where they start: the lifecycle's
    // admission for new leases, the sweep's workers for the reconciler's.
    const backend = owner ?? this.#route(lease, target);
    if (backend === undefined) return "unroutable";
    const attempt: Attempt = {
      leaseUuid,
      backend,
      operationId: newUuidV4(),
      kind: "provision",
      createdAt: this.#deps.clock.now(),
    };
    if (this.#deps.store.recordAttempt(attempt) === "lease-busy") return "already-recorded";
    // The attempts of concurrent leases written in this turn share its one commit and fsync.
    await this.#deps.store.durable();
    failpoint("provision.after-attempt-commit");
    return this.send(attempt, lease, payload, signal, "first");
  }

  /** The router's choice for a new lease, kept only inside the plan's scope when it has one. */
  #route(lease: ChainLease, target: ProvisionTarget | undefined): string | undefined {
    const decision = this.#deps.router.choose(lease.items[0]?.skuUuid ?? "");
    if (decision.kind !== "backend") {
      this.#deps.logger.warn({ lease_uuid: lease.uuid, reason: decision.reason }, "lease not routable now");
      return undefined;
    }
    if (target !== undefined && "scope" in target && !target.scope.includes(decision.backend))
      return undefined;
    return decision.backend;
  }

  /**
   * Re-sends an unresolved attempt to its attempted backend with the same operation id.
   * "lease-ended": the chain says the lease is CLOSED, REJECTED or EXPIRED; the caller,
   * still inside the lease's queue, hands it to the Closer (which retires the attempt once
   * its backend accepts the deprovision). An ACTIVE lease, or one the chain does not
   * return (a lagging or wrong node proves nothing), keeps its attempt: "not-pending".
   */
  async redeliver(attempt: Attempt, signal: AbortSignal): Promise<ProvisionStep | "lease-ended"> {
    const current = this.#deps.store.attemptFor(attempt.leaseUuid);
    if (current?.operationId !== attempt.operationId) return "already-recorded";
    if (this.inFlight.has(attempt.leaseUuid)) return "sent";
    const lease = await this.leases.get(attempt.leaseUuid);
    if (lease !== undefined && leaseEnded(lease.state)) return "lease-ended";
    if (lease === undefined || lease.state !== "LEASE_STATE_PENDING") {
      this.#deps.logger.warn(
        {
          lease_uuid: attempt.leaseUuid,
          backend: attempt.backend,
          operation_id: attempt.operationId,
          lease_state: lease?.state ?? "not found",
        },
        "unresolved attempt of a lease that is not PENDING; kept for the reconciler",
      );
      return "not-pending";
    }
    // A restore sends no payload (the backend deploys the retained manifest).
    const source = lease.metaHash !== "" && attempt.kind === "provision" ? "stored" : "none";
    const payload = await choosePayload(this.#deps, lease, source, undefined, signal);
    if (payload === "missing") return "awaiting-payload";
    return this.send(attempt, lease, payload, signal, "again");
  }

  /**
   * Sends the attempt: a provision, or (kind restore: redelivery of an admitted restore) the
   * same restore again, from the retained source the store recorded for it. A refused
   * restore is not rejected on chain: the tenant keeps the lease and may restore again.
   * `delivery`: "first" when no earlier send of this operation exists (the attempt was
   * just committed); "again" for a redelivery, which an earlier send may have preceded.
   */
  async send(
    attempt: Attempt,
    lease: ChainLease,
    payload: StoredPayload | undefined,
    signal: AbortSignal,
    delivery: "first" | "again",
  ): Promise<ProvisionStep> {
    const { clients, router, store, acks, config, logger } = this.#deps;
    // The lease's fields go with each line, not into a child logger: a child serializes its
    // bindings when made, whether or not anything is logged at the configured level.
    const ids = {
      lease_uuid: attempt.leaseUuid,
      backend: attempt.backend,
      operation_id: attempt.operationId,
    };
    const client = clients.get(attempt.backend);
    if (client === undefined) {
      logger.warn(ids, "attempted backend is no longer configured; attempt left for the operator");
      return "ambiguous";
    }
    const request = leaseRequest(config, lease, attempt);
    const source = attempt.kind === "restore" ? store.retained.sourceOf(attempt.leaseUuid) : undefined;
    if (attempt.kind === "restore" && source === undefined) {
      logger.warn(ids, "restore attempt without a claimed source; attempt left for the operator");
      return "ambiguous";
    }
    this.inFlight.add(attempt.leaseUuid);
    router.begin(attempt.backend);
    let outcome: Awaited<ReturnType<typeof client.provision>>;
    try {
      outcome =
        source !== undefined
          ? await client.restore({ ...request, fromLeaseUuid: source.leaseUuid }, signal)
          : await client.provision(
              {
                ...request,
                ...(payload === undefined ? {} : { payload: payload.payload, payloadHash: payload.sha256 }),
              },
              signal,
            );
    } finally {
      router.end(attempt.backend);
      this.inFlight.delete(attempt.leaseUuid);
    }
    this.#deps.observe.provisionSent(attempt.backend, outcome.kind);
    switch (outcome.kind) {
      case "accepted":
        failpoint("provision.after-accepted");
        logger.info(ids, "provision accepted; waiting for the callback");
        return "sent";
      case "refused": {
        store.clearRefusedAttempt(attempt.leaseUuid, attempt.operationId);
        await store.durable();
        const reason = rejectionForRefusal(outcome);
        logger.warn({ ...ids, status: outcome.status, reason }, "provision refused");
        if (reason !== undefined && attempt.kind === "provision") acks.reject(attempt.leaseUuid, reason);
        return "refused";
      }
      case "not-sent":
        if (delivery === "again") {
          // This try reached nothing, but an earlier send of the same operation (this
          // process's, or a killed providerd's) may have: the backend may hold the lease,
          // so the attempt stays and the next sweep or timeout check redelivers it.
          // Clearing it here made the lease look recordless and sent it to a second backend.
          logger.warn(
            { ...ids, reason: outcome.reason, detail: outcome.detail },
            "redelivery not sent; attempt kept",
          );
          return "ambiguous";
        }
        // Nothing of this operation ever left this process, so the write-ahead row proves
        // nothing: drop it and retry.
        store.clearRefusedAttempt(attempt.leaseUuid, attempt.operationId);
        throw new FredError("ERR_PROVISION_NOT_SENT", outcome.detail, { retryable: true });
      case "ambiguous":
        logger.warn(
          { ...ids, reason: outcome.reason, detail: outcome.detail },
          "provision outcome unknown; attempt kept",
        );
        return "ambiguous";
    }
  }
}

/**
 * Whether the lease's placement record leaves room for a new provision: a new lease (no
 * target, or a scope) has none; a provision on the lease's own backend finds none or that
 * backend's confirmed record; a re-provision needs that confirmed record.
 */
function placementAdmits(
  placement: Placement | undefined,
  target: ProvisionTarget | undefined,
  reprovision: boolean,
): boolean {
  if (target === undefined || "scope" in target) return placement === undefined;
  if (placement === undefined) return !reprovision;
  return placement.state === "confirmed" && placement.owner === target.backend;
}

/**
 * The payload a provision sends, from where its caller says it comes:
 *  - "none": the lease carries no meta_hash, nothing is sent;
 *  - "stored": the tenant's upload, sent only when `payloadAccepted` (core/lease-rules.ts);
 *  - "latest_release": the stored payload is gone (a lost or cleaned payload store), so it is
 *    rebuilt from the manifest of `backend`'s latest active release, and used (and stored
 *    again) only if its SHA-256 is the lease's meta_hash.
 * "missing": nothing acceptable yet; the caller waits (event path) or leaves the lease for a
 * later sweep.
 */
export type ChosenPayload = StoredPayload | undefined | "missing";

export async function choosePayload(
  d: LifecycleDeps,
  lease: ChainLease,
  source: PayloadSource,
  backend: string | undefined,
  signal: AbortSignal,
): Promise<ChosenPayload> {
  if (source === "none") return undefined;
  const stored = await d.payloads?.get(lease.uuid);
  if (stored !== undefined) {
    if (payloadAccepted(stored, lease.metaHash)) return stored;
    d.logger.warn({ lease_uuid: lease.uuid }, "stored payload does not match meta_hash; waiting");
    return "missing";
  }
  if (source !== "latest_release" || backend === undefined) return "missing";
  const rebuilt = await fromLatestRelease(d, lease, backend, signal);
  if (rebuilt === undefined) return "missing";
  if (d.payloads !== undefined) {
    await d.payloads.put(lease.uuid, rebuilt.payload, rebuilt.storedAt, lease.metaHash);
    await d.payloads.durable();
  }
  d.logger.info(
    { lease_uuid: lease.uuid, backend },
    "payload rebuilt from the owner's latest active release",
  );
  return rebuilt;
}

async function fromLatestRelease(
  d: LifecycleDeps,
  lease: ChainLease,
  backend: string,
  signal: AbortSignal,
): Promise<StoredPayload | undefined> {
  const client = d.clients.get(backend);
  if (client === undefined || lease.metaHash === "") return undefined;
  let releases: Awaited<ReturnType<typeof client.releases>>;
  try {
    releases = await client.releases(lease.uuid, signal);
  } catch (err) {
    if (signal.aborted) throw err;
    d.logger.warn({ err, lease_uuid: lease.uuid, backend }, "releases unreadable; payload not rebuilt");
    return undefined;
  }
  const latest = (releases ?? [])
    .filter((r) => r.status === "active" && typeof r.manifest === "string")
    .sort((a, b) => b.version - a.version)[0];
  if (latest?.manifest === undefined) return undefined;
  const payload = Buffer.from(latest.manifest, "base64");
  const sha256 = sha256Hex(payload);
  if (sha256 !== lease.metaHash) {
    d.logger.warn(
      { lease_uuid: lease.uuid, backend, version: latest.version },
      "the latest active release does not match meta_hash; payload not rebuilt",
    );
    return undefined;
  }
  return {
    leaseUuid: lease.uuid,
    payload,
    sha256,
    uploadSha256: sha256,
    storedAt: d.clock.now(),
    promoted: false,
  };
}

// The provision workflow's lease reads.

/**
 * Re-reads leases for the provision workflow. Requests made in the same turn are
 * coalesced: a handful are read one by one, but a burst (a block full of new leases)
 * becomes one paged PENDING listing of the provider's leases, with single reads only for
 * leases that listing does not contain.
 *
 * A block's lease_created events reach us as many frames (one per tx), so the bursts of
 * one block arrive turn after turn. Only one listing runs at a time, and what it lists
 * stays usable for `listingTtlMs`: later bursts of the same block are answered from it
 * instead of listing thousands of leases again. Requests are answered page by page as
 * the listing arrives, so the first provisions go out while it is still running. Each
 * listed lease answers one request (the next read of that lease goes to the chain). The
 * time to live counts from the listing's end: a listing slower than it (a loaded node)
 * must not throw away its own pages. Single reads are not bounded here: the chain
 * connection's query pool is the one bound on ABCI queries at once (16 connections; the
 * rest wait in its queue), so a burst of single reads can no longer open thousands of
 * connections to the node (the runaway once seen on a loaded machine). A lease seen PENDING a moment ago may
 * have been closed since; that is no worse than the read itself, which is stale by the
 * time the provision goes out — the lease_closed event that follows tears it down.
 */
type Waiter = { resolve: (l: ChainLease | undefined) => void; reject: (e: unknown) => void };

export interface ProvisionLeaseReadsOptions {
  /** Requests in one turn that make a listing worth it (default 32). */
  burst?: number;
  /** How long a listing's leases may answer later requests (default 2 s). */
  listingTtlMs?: number;
}

export class ProvisionLeaseReads {
  readonly #chain: ChainPort;
  readonly #providerUuid: string;
  readonly #clock: Clock;
  readonly #burst: number;
  readonly #ttlMs: number;
  #waiting = new Map<string, Waiter[]>();
  #scheduled = false;
  /** Leases of the latest listing not yet handed out, and when that listing ended (+∞ while it runs). */
  #listed = new Map<string, ChainLease>();
  #listedAt = Number.NEGATIVE_INFINITY;
  #listing: Promise<void> | undefined;
  /** Batches waiting on the running listing; each page answers what it can. */
  readonly #joiners = new Set<Map<string, Waiter[]>>();
  /** Paged listings done instead of single reads (for tests and metrics). */
  sweeps = 0;

  constructor(chain: ChainPort, providerUuid: string, clock: Clock, opts: ProvisionLeaseReadsOptions = {}) {
    this.#chain = chain;
    this.#providerUuid = providerUuid;
    this.#clock = clock;
    this.#burst = opts.burst ?? 32;
    this.#ttlMs = opts.listingTtlMs ?? 2_000;
  }

  get(leaseUuid: string): Promise<ChainLease | undefined> {
    return new Promise((resolve, reject) => {
      const list = this.#waiting.get(leaseUuid) ?? [];
      list.push({ resolve, reject });
      this.#waiting.set(leaseUuid, list);
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    this.#scheduled = false;
    const batch = this.#waiting;
    this.#waiting = new Map();
    this.#answerFromListing(batch);
    if (batch.size >= this.#burst) {
      // A listing already running started before these requests: it may lack them, so
      // whatever it leaves unanswered waits for one that starts afterwards.
      if (this.#listing !== undefined) await this.#join(batch);
      if (batch.size >= this.#burst) await this.#join(batch, this.#listing ?? this.#list());
    }
    await Promise.all(
      [...batch].map(async ([uuid, waiters]) => {
        try {
          const lease = await this.#chain.getLease(uuid);
          for (const w of waiters) w.resolve(lease);
        } catch (err) {
          for (const w of waiters) w.reject(err);
        }
      }),
    );
  }

  /** Resolves (and removes from `batch`) every request the current listing can answer. */
  #answerFromListing(batch: Map<string, Waiter[]>): void {
    if (this.#listed.size === 0) return;
    if (this.#clock.now() - this.#listedAt > this.#ttlMs) {
      this.#listed = new Map();
      return;
    }
    for (const [uuid, waiters] of batch) {
      const lease = this.#listed.get(uuid);
      if (lease === undefined) continue;
      this.#listed.delete(uuid);
      batch.delete(uuid);
      for (const w of waiters) w.resolve(lease);
    }
  }

  /** Resolves the first batch waiting on the running listing that asks for `lease`; false if none does. */
  #answerJoiner(lease: ChainLease): boolean {
    for (const batch of this.#joiners) {
      const waiters = batch.get(lease.uuid);
      if (waiters === undefined) continue;
      batch.delete(lease.uuid);
      for (const w of waiters) w.resolve(lease);
      return true;
    }
    return false;
  }

  /** Answers `batch` from the running listing's pages until it ends. */
  async #join(batch: Map<string, Waiter[]>, listing = this.#listing): Promise<void> {
    this.#joiners.add(batch);
    this.#answerFromListing(batch);
    try {
      await listing;
    } finally {
      this.#joiners.delete(batch);
    }
  }

  #list(): Promise<void> {
    this.sweeps++;
    this.#listed = new Map();
    this.#listedAt = Number.POSITIVE_INFINITY;
    // Each listed lease answers a waiting request at once, or stays for later ones: a page
    // is matched against the waiting batches lease by lease, not every batch against the
    // whole listing again (10,000 waiting leases × 100 pages).
    const add = (page: readonly ChainLease[]) => {
      for (const l of page) if (!this.#answerJoiner(l)) this.#listed.set(l.uuid, l);
    };
    let paged = false;
    this.#listing = this.#chain
      .leasesByProvider(this.#providerUuid, "LEASE_STATE_PENDING", undefined, (page) => {
        paged = true;
        add(page);
      })
      .then(
        // A chain port that does not report pages hands everything over at the end.
        (pending) => {
          if (!paged) add(pending);
        },
        // A failed listing only costs the single reads that follow.
        () => undefined,
      )
      .finally(() => {
        this.#listing = undefined;
        this.#listedAt = this.#clock.now();
      });
    return this.#listing;
  }
}
