import type { LogStreamEvent } from "../../core/backend-contract/index.ts";
import { ApiError } from "./errors.ts";

/**
 * The bounds of `GET /v1/leases/{uuid}/logs?follow=true` (documented in
 * docs/tenant-api.md): how many streams are open per lease and in all, how fast one
 * container stream may send (bytes of log lines per second, with a burst; the excess is
 * dropped and counted in a `dropped` frame), how much may wait for a client that is not
 * reading before it is cut off, and the keep-alive and lifetime timings.
 */
export interface LogFollowLimits {
  perLease: number;
  total: number;
  bytesPerSecond: number;
  burstBytes: number;
  maxBufferedBytes: number;
  pingIntervalMs: number;
  pongTimeoutMs: number;
  lifetimeMs: number;
  /** How often counts of dropped lines are reported while lines are being dropped. */
  dropReportMs: number;
}

export const LOG_FOLLOW_LIMITS: LogFollowLimits = {
  perLease: 4,
  total: 128,
  bytesPerSecond: 128 * 1024,
  burstBytes: 512 * 1024,
  maxBufferedBytes: 512 * 1024,
  pingIntervalMs: 30_000,
  pongTimeoutMs: 40_000,
  lifetimeMs: 60 * 60_000,
  dropReportMs: 1_000,
};

/** The close codes of a log stream besides the standard ones (1001 shutdown, 1008, 1011, 1013). */
export const LOG_CLOSE = {
  /** The lease's workload is gone (closed, deprovisioned): nothing more will be written. */
  leaseEnded: 4000,
} as const;

export const followFull = () =>
  new ApiError("ERR_API_LOG_FOLLOW_FULL", 503, "too many log streams are open; retry shortly", {
    retryAfterSeconds: 5,
  });

/** One open stream: whoever holds it closes the socket when asked (shutdown). */
export interface FollowSlot {
  readonly leaseUuid: string;
  /** Set once the socket exists; shutdown closes it with 1001. */
  close: ((code: number, reason: string) => void) | undefined;
  /** Idempotent. */
  release(): void;
}

/** Counts open log streams per lease and in all; refuses past the caps; closes them all at shutdown. */
export class LogFollows {
  readonly limits: LogFollowLimits;
  readonly #perLease = new Map<string, number>();
  readonly #open = new Set<FollowSlot>();
  #closed = false;

  constructor(limits: LogFollowLimits = LOG_FOLLOW_LIMITS) {
    this.limits = limits;
  }

  get open(): number {
    return this.#open.size;
  }

  /** A slot for one more stream of the lease, or the 503 refusal. */
  reserve(leaseUuid: string): FollowSlot {
    const here = this.#perLease.get(leaseUuid) ?? 0;
    if (this.#closed || this.#open.size >= this.limits.total || here >= this.limits.perLease)
      throw followFull();
    this.#perLease.set(leaseUuid, here + 1);
    let held = true;
    const slot: FollowSlot = {
      leaseUuid,
      close: undefined,
      release: () => {
        if (!held) return;
        held = false;
        this.#open.delete(slot);
        const left = (this.#perLease.get(leaseUuid) ?? 1) - 1;
        if (left <= 0) this.#perLease.delete(leaseUuid);
        else this.#perLease.set(leaseUuid, left);
      },
    };
    this.#open.add(slot);
    return slot;
  }

  /** Shutdown: every open stream hears `code` (1001), and no new one is admitted. */
  close(code = 1001, reason = "server shutting down"): void {
    this.#closed = true;
    for (const slot of [...this.#open]) slot.close?.(code, reason);
  }
}

/** A tenant frame: the pinned line frame, an instance frame, or a count of dropped lines. */
export type TenantLogFrame =
  | Exclude<LogStreamEvent, { type: "keepalive" } | { type: "end" }>
  | {
      type: "dropped";
      service: string;
      instance: number;
      stream: "stdout" | "stderr";
      lines: number;
      bytes: number;
    };
