// The tenant event stream's core: the hub (each lease's frames, buffer and subscribers)
// and the publisher that turns what providerd learns about a lease (an accepted upload,
// maintenance progress, an applied callback) into the hub's frames.
import type { LeaseStateName } from "../../chain/port.ts";
import { KeyedMutex } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { tenantSafeText } from "../../core/envelope.ts";
import type { Logger } from "../../log.ts";
import type { ApplyResult, LifecycleEvents, VerifiedCallback } from "../lifecycle/index.ts";
import type { Maintenance } from "../maintenance/index.ts";
import type { TenantLeaseReads } from "./tenant-lease-reads.ts";

/**
 * Lease status events for WebSocket subscribers, with what makes a stream trustworthy:
 * every frame carries `seq` — one counter for the whole hub, so it increases per lease
 * and is never reused, and it starts from the clock (in microsecond steps) so frames of
 * a restarted providerd sort after the old ones — and the chain `state`. Each lease keeps
 * its last `bufferSize` frames, so a client that reconnects with `since` gets exactly what
 * it missed; when the frames it missed are no longer all held (fell out of the buffer, the
 * lease was forgotten, or a restart), it is told so with a reset instead of a silent gap.
 *
 * Subscribers are sinks: the hub never blocks on one. The caps (per lease, in total) are
 * checked on subscribe; the route closes a refused connection with 1013.
 */
export interface EventFrame {
  type?: "snapshot";
  lease_uuid: string;
  status: string;
  error?: string;
  timestamp: string;
  seq: number;
  state: LeaseStateName;
}

/** A frame without lease_uuid/status: only for clients that opted in (`since`, `notices`). */
export type Notice = { type: string } & Record<string, unknown>;

export interface Subscriber {
  readonly leaseUuid: string;
  /** Receives reset and notice frames (the client asked with `since` or `notices`). */
  readonly optedIn: boolean;
  send(frame: EventFrame | Notice): void;
  close(code: number, reason: string): void;
}

export interface EventHubOptions {
  clock: Clock;
  perLease?: number;
  total?: number;
  bufferSize?: number;
  /** Leases whose frames are remembered; the least recently active is forgotten first. */
  maxLeases?: number;
}

interface Channel {
  frames: EventFrame[];
  subscribers: Set<Subscriber>;
  /** The highest seq this channel dropped from its buffer (0: none). */
  droppedUpTo: number;
  lastStatus: string | undefined;
}

export type Resume = { kind: "replay"; frames: EventFrame[] } | { kind: "reset" };

export class EventHub {
  readonly #clock: Clock;
  readonly #perLease: number;
  readonly #total: number;
  readonly #bufferSize: number;
  readonly #maxLeases: number;
  readonly #channels = new Map<string, Channel>();
  /** Every seq at or below this may have belonged to a frame no channel holds any more. */
  #forgottenUpTo: number;
  #seq: number;
  #subscribers = 0;
  #closed = false;

  constructor(opts: EventHubOptions) {
    this.#clock = opts.clock;
    this.#perLease = opts.perLease ?? 10;
    this.#total = opts.total ?? 1_000;
    this.#bufferSize = opts.bufferSize ?? 32;
    this.#maxLeases = opts.maxLeases ?? 4_096;
    this.#seq = opts.clock.now() * 1_000;
    // Frames of an earlier process (seq below ours) are not held by this one.
    this.#forgottenUpTo = this.#seq;
  }

  get subscribers(): number {
    return this.#subscribers;
  }

  /** The seq of the latest frame published anywhere: a snapshot taken now reflects it. */
  get currentSeq(): number {
    return this.#seq;
  }

  /** The last status published for the lease by this process, if any. */
  lastStatus(leaseUuid: string): string | undefined {
    return this.#channels.get(leaseUuid)?.lastStatus;
  }

  /** Whether anybody is subscribed to the lease now. */
  watched(leaseUuid: string): boolean {
    return (this.#channels.get(leaseUuid)?.subscribers.size ?? 0) > 0;
  }

  /** Adds a subscriber; "full" when the lease or the hub is at its cap (or the hub closed). */
  subscribe(sub: Subscriber): "ok" | "full" {
    if (this.#closed || this.#subscribers >= this.#total) return "full";
    const ch = this.#channel(sub.leaseUuid);
    if (ch.subscribers.size >= this.#perLease) return "full";
    ch.subscribers.add(sub);
    this.#subscribers++;
    return "ok";
  }

  unsubscribe(sub: Subscriber): void {
    const ch = this.#channels.get(sub.leaseUuid);
    if (ch?.subscribers.delete(sub)) this.#subscribers--;
  }

  /** What a client that saw everything up to `since` missed, or "reset" when that is not known. */
  resume(leaseUuid: string, since: number): Resume {
    if (since > this.#seq) return { kind: "reset" };
    const ch = this.#channels.get(leaseUuid);
    const lost = Math.max(this.#forgottenUpTo, ch?.droppedUpTo ?? 0);
    if (since < lost) return { kind: "reset" };
    return { kind: "replay", frames: (ch?.frames ?? []).filter((f) => f.seq > since) };
  }

  /** Publishes a status frame for the lease to its subscribers and its buffer. */
  publish(leaseUuid: string, status: string, state: LeaseStateName, error?: string): EventFrame {
    const frame: EventFrame = {
      lease_uuid: leaseUuid,
      status,
      timestamp: new Date(this.#clock.now()).toISOString(),
      seq: ++this.#seq,
      state,
    };
    if (error !== undefined && error !== "") frame.error = error;
    const ch = this.#channel(leaseUuid);
    ch.lastStatus = status;
    ch.frames.push(frame);
    if (ch.frames.length > this.#bufferSize) ch.droppedUpTo = ch.frames.shift()?.seq ?? ch.droppedUpTo;
    for (const sub of [...ch.subscribers]) sub.send(frame);
    return frame;
  }

  /**
   * Sends a notice to the lease's opted-in subscribers (not buffered), stamped with the
   * next seq so it sorts among the status frames.
   */
  notify(leaseUuid: string, notice: Notice): void {
    const subs = [...(this.#channels.get(leaseUuid)?.subscribers ?? [])].filter((s) => s.optedIn);
    if (subs.length === 0) return;
    const frame = { ...notice, seq: ++this.#seq };
    for (const sub of subs) sub.send(frame);
  }

  /** Closes every subscriber (shutdown: 1001) and refuses new ones. */
  close(code = 1001, reason = "server shutting down"): void {
    this.#closed = true;
    for (const ch of this.#channels.values()) for (const sub of [...ch.subscribers]) sub.close(code, reason);
  }

  #channel(leaseUuid: string): Channel {
    let ch = this.#channels.get(leaseUuid);
    if (ch !== undefined) {
      // Map order is recency order: re-inserting marks the lease as the most recent.
      this.#channels.delete(leaseUuid);
      this.#channels.set(leaseUuid, ch);
      return ch;
    }
    ch = { frames: [], subscribers: new Set(), droppedUpTo: 0, lastStatus: undefined };
    this.#channels.set(leaseUuid, ch);
    if (this.#channels.size > this.#maxLeases) this.#evictIdle();
    return ch;
  }

  /** Forgets the least recently active lease that has no subscriber. */
  #evictIdle(): void {
    for (const [uuid, ch] of this.#channels) {
      if (ch.subscribers.size > 0) continue;
      const last = ch.frames.at(-1)?.seq ?? 0;
      this.#forgottenUpTo = Math.max(this.#forgottenUpTo, last);
      this.#channels.delete(uuid);
      return;
    }
  }
}

/** The instruction a `retained` frame carries in `error` (the stream's documented place for it). */
export const RETAINED_NOTICE =
  "the lease's data was retained; to restore it, open a new lease with the same services and POST /v1/leases/{new_lease_uuid}/restore with this lease as from_lease_uuid";

/** The status frame an applied callback stands for, if any. */
export function callbackFrame(
  cb: VerifiedCallback,
  result: ApplyResult,
): { status: string; error?: string; state?: LeaseStateName } | undefined {
  const failed = { status: "failed", error: cb.error };
  switch (result) {
    // The outcome of a provision: the lease is PENDING until the ack or reject lands.
    case "acknowledging":
      return { status: "ready", state: "LEASE_STATE_PENDING" };
    case "rejecting":
      return { ...failed, state: "LEASE_STATE_PENDING" };
    // Best effort: the lease's status (GET status) is the durable record of the retention.
    case "retained":
      return { status: "retained", error: RETAINED_NOTICE };
    case "observed":
      if (cb.status === "success") return { status: "ready" };
      return cb.status === "failed" ? failed : undefined;
    default:
      return undefined;
  }
}

/** What the publisher hears (`TenantApiDeps.maintenance` and `.callbacks`). */
export interface FrameSources {
  maintenance?: Maintenance | undefined;
  callbacks?:
    | {
        on(
          event: "callback-applied",
          listener: (...args: LifecycleEvents["callback-applied"]) => void,
        ): unknown;
      }
    | undefined;
}

/**
 * Turns what providerd learns about a lease into hub frames, published one lease at a time
 * in the order they were reported; publishing never holds up the caller (a callback
 * answer, an upload's 202). The chain state a frame carries is read through the lease
 * cache (coalesced, under one block old) while somebody watches the lease. A frame nobody
 * watches takes the state its source already knows (an upload or a provision outcome
 * happens while the lease is PENDING): a burst of 10,000 callbacks must not turn into
 * 10,000 chain queries for frames that may never be read.
 */
export class LeaseEventPublisher {
  readonly #hub: EventHub;
  readonly #leases: TenantLeaseReads;
  readonly #logger: Logger;
  readonly #order = new KeyedMutex();
  readonly #lastState = new Map<string, LeaseStateName>();

  constructor(hub: EventHub, leases: TenantLeaseReads, logger: Logger) {
    this.#hub = hub;
    this.#leases = leases;
    this.#logger = logger;
  }

  /**
   * Publishes `status` for the lease; resolves once its frame went out. `knownState` is the
   * chain state the caller knows the lease is in; it stands in for a chain read while
   * nobody watches the lease.
   */
  publish(leaseUuid: string, status: string, error?: string, knownState?: LeaseStateName): Promise<void> {
    return this.#order
      .run(leaseUuid, async () => {
        let state = knownState ?? this.#lastState.get(leaseUuid) ?? "LEASE_STATE_UNSPECIFIED";
        if (knownState === undefined || this.#hub.watched(leaseUuid)) {
          try {
            state = (await this.#leases.read(leaseUuid))?.state ?? state;
          } catch (err) {
            this.#logger.debug({ err, lease_uuid: leaseUuid }, "event frame: chain state unavailable");
          }
        }
        if (this.#lastState.size > 10_000) this.#lastState.clear();
        this.#lastState.set(leaseUuid, state);
        this.#hub.publish(leaseUuid, status, state, error === undefined ? undefined : tenantSafeText(error));
      })
      .catch((err) => this.#logger.warn({ err, lease_uuid: leaseUuid }, "event frame not published"));
  }

  /**
   * Hears where frames come from, when present: the maintenance service's `progress` (a
   * command the backend accepted) and the lifecycle's `callback-applied`.
   */
  listen(sources: FrameSources): void {
    sources.maintenance?.on("progress", (lease, status) => void this.publish(lease, status));
    sources.callbacks?.on("callback-applied", (cb, result) => this.callbackApplied(cb, result));
  }

  /** An upload was answered 202: its lease is PENDING and its provisioning starts. */
  uploadAccepted(leaseUuid: string): void {
    void this.publish(leaseUuid, "provisioning", undefined, "LEASE_STATE_PENDING");
  }

  callbackApplied(cb: VerifiedCallback, result: ApplyResult): void {
    const frame = callbackFrame(cb, result);
    if (frame !== undefined) void this.publish(cb.leaseUuid, frame.status, frame.error, frame.state);
  }
}
