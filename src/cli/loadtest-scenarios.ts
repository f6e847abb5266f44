import { randomBytes, randomUUID } from "node:crypto";
import { SIGNATURE_HEADER, signRequest } from "../auth/hmac.ts";
import { mintTenantToken } from "../auth/token.ts";
import { sleepOrAbort } from "../core/async/index.ts";
import type { Clock } from "../core/clock.ts";
import type { FixtureCallback, FixtureLease } from "./loadtest-fixtures.ts";

/**
 * The requests of each `fred loadtest` scenario, as the reference names them:
 * `rejection` (unauthenticated: what a flood of strangers costs), `status` (authenticated
 * reads), `connection` (replay-protected reads, paced), `payload` (manifest uploads),
 * `callback` (recorded backend callbacks, re-signed) and `mixed` (40% uploads, 60%
 * connections; 40/50/10 with callbacks). Tokens come from src/auth/token.ts and callback
 * signatures from src/auth/hmac.ts; nothing here invents a lease, an id or an outcome.
 */
export const SCENARIOS = ["rejection", "status", "connection", "payload", "callback", "mixed"] as const;
export type Scenario = (typeof SCENARIOS)[number];
export type RequestKind = Exclude<Scenario, "mixed">;

export interface LoadRequest {
  kind: RequestKind;
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface ScenarioInput {
  scenario: Scenario;
  clock: Clock;
  leases: readonly FixtureLease[];
  callbacks: readonly FixtureCallback[];
  tenantKey?: Uint8Array;
  callbackSecret?: Buffer;
  bech32Prefix: string;
  /** rejection only: send unauthenticated uploads of this many bytes instead of reads. */
  payloadSize?: number;
}

/** Gives the next request, or undefined once `signal` ends the run while it waited. */
export type RequestSource = (signal: AbortSignal) => Promise<LoadRequest | undefined>;

const seconds = (clock: Clock) => Math.floor(clock.now() / 1000);

/**
 * Replay-protected tokens carry a second-resolution timestamp and the signature is
 * deterministic, so one lease yields one fresh token per second: each lease is handed out
 * at most once per wall-clock second, and a caller waits for the next second when the
 * whole pool was used in this one. A larger pool gives more throughput. The second the
 * run starts in counts as used: a run that ended a moment ago may have spent it.
 */
export class LeasePacer {
  readonly #lastSecond = new Map<string, number>();
  readonly #startSecond: number;
  #cursor = 0;

  constructor(
    private readonly leases: readonly string[],
    private readonly clock: Clock,
  ) {
    this.#startSecond = seconds(clock);
  }

  async take(signal: AbortSignal): Promise<{ lease: string; timestamp: number } | undefined> {
    for (;;) {
      const now = seconds(this.clock);
      for (let i = 0; i < this.leases.length; i++) {
        const at = (this.#cursor + i) % this.leases.length;
        const lease = this.leases[at] as string;
        if ((this.#lastSecond.get(lease) ?? this.#startSecond) < now) {
          this.#lastSecond.set(lease, now);
          this.#cursor = at + 1;
          return { lease, timestamp: now };
        }
      }
      try {
        await sleepOrAbort(this.clock, (now + 1) * 1000 - this.clock.now(), signal);
      } catch {
        return undefined;
      }
    }
  }
}

/** Round-robin over a fixed list. */
function cycle<T>(items: readonly T[]): () => T {
  let i = 0;
  return () => items[i++ % items.length] as T;
}

/** Which part of a mixed run request `n` belongs to (a fixed 10-slot pattern, so shares are exact). */
export function mixedKind(n: number, withCallbacks: boolean): RequestKind {
  const slot = n % 10;
  if (slot < 4) return "payload";
  if (!withCallbacks || slot < 9) return "connection";
  return "callback";
}

export function requestSource(input: ScenarioInput): RequestSource {
  const { clock } = input;
  const token = (lease: string, timestamp: number, metaHash?: string) =>
    `Bearer ${mintTenantToken({
      privateKey: input.tenantKey as Uint8Array,
      leaseUuid: lease,
      timestamp,
      prefix: input.bech32Prefix,
      ...(metaHash === undefined ? {} : { metaHash }),
    })}`;
  const pacer = new LeasePacer(
    input.leases.map((l) => l.uuid),
    clock,
  );
  const statusLease = cycle(input.leases);
  const uploadLease = cycle(input.leases.filter((l) => l.payload !== undefined));
  const callback = cycle(input.callbacks);
  const rejectionBody = input.payloadSize === undefined ? undefined : randomBytes(input.payloadSize);

  const build: Record<RequestKind, (signal: AbortSignal) => Promise<LoadRequest | undefined>> = {
    rejection: async (): Promise<LoadRequest> =>
      rejectionBody === undefined
        ? { kind: "rejection", method: "GET", path: `/v1/leases/${randomUUID()}/connection`, headers: {} }
        : {
            kind: "rejection",
            method: "POST",
            path: `/v1/leases/${randomUUID()}/data`,
            headers: { "content-type": "application/octet-stream" },
            body: rejectionBody,
          },
    status: async () => {
      const lease = statusLease().uuid;
      return {
        kind: "status",
        method: "GET",
        path: `/v1/leases/${lease}/status`,
        headers: { authorization: token(lease, seconds(clock)) },
      };
    },
    connection: async (signal) => {
      const next = await pacer.take(signal);
      if (next === undefined) return undefined;
      return {
        kind: "connection",
        method: "GET",
        path: `/v1/leases/${next.lease}/connection`,
        headers: { authorization: token(next.lease, next.timestamp) },
      };
    },
    payload: async () => {
      const lease = uploadLease();
      const payload = lease.payload as NonNullable<FixtureLease["payload"]>;
      return {
        kind: "payload",
        method: "POST",
        path: `/v1/leases/${lease.uuid}/data`,
        headers: {
          authorization: token(lease.uuid, seconds(clock), payload.metaHash),
          "content-type": "application/octet-stream",
        },
        body: payload.bytes,
      };
    },
    callback: async () => {
      const cb = callback();
      const signature = signRequest(input.callbackSecret as Buffer, {
        method: "POST",
        uri: cb.uri,
        body: cb.body,
        timestamp: seconds(clock),
      });
      return {
        kind: "callback",
        method: "POST",
        path: cb.uri,
        headers: { [SIGNATURE_HEADER]: signature, "content-type": "application/json" },
        body: cb.body,
      };
    },
  };
  if (input.scenario !== "mixed") return build[input.scenario];
  let n = 0;
  const withCallbacks = input.callbacks.length > 0;
  return (signal) => build[mixedKind(n++, withCallbacks)](signal);
}
