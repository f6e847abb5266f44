// What every tenant route is built on: the API's dependencies and shared parts
// (`TenantContext`), one request's lifetime (`RequestScope`: deadline and client-gone
// signal) and the one error edge (`tenantRoute`).
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from "fastify";
import { Counter, type Registry } from "prom-client";
import type { TokenClaims } from "../../auth/token.ts";
import type { ChainLease, ChainPort, LeaseStateName } from "../../chain/port.ts";
import { type Coalescer, RateBuckets } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { BackendClient } from "../backend-client/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import type { Maintenance } from "../maintenance/index.ts";
import type { Restorer } from "../retention/index.ts";
import type { BackendFleet, PayloadRecords, Placements, ReplayStore } from "../store/index.ts";
import { type TenantCounters, tenantCounters } from "./api-counters.ts";
import { type AuthRequirement, leaseUuidParam, TenantAuth } from "./auth.ts";
import { ApiError, refuse, sendApiError } from "./errors.ts";
import type { EventHub, EventHubOptions, FrameSources } from "./event-hub.ts";
import { maintenanceAnswer } from "./maintenance-answers.ts";
import { type ProvisionRead, provisionReads } from "./provision-reads.ts";
import { type BlockSignal, TenantLeaseReads, type TenantLeaseReadsOptions } from "./tenant-lease-reads.ts";

export interface EventTimings {
  maxMessageBytes: number;
  pingIntervalMs: number;
  pongTimeoutMs: number;
  lifetimeMs: number;
  maxBufferedBytes: number;
}

/** What the tenant API is built from; the composition root passes each piece explicitly. */
export interface TenantApiDeps {
  config: ProviderConfig;
  chain: ChainPort;
  store: Placements;
  /** The pinned backends (storage identities, lost backends, baselines). */
  fleet: BackendFleet;
  payloads: PayloadRecords | undefined;
  tokens: ReplayStore | undefined;
  clients: ReadonlyMap<string, BackendClient>;
  clock: Clock;
  logger: Logger;
  /** A payload for the lease is durably stored: start its provisioning now. */
  payloadStored(leaseUuid: string): void;
  /** The restore application behind `POST restore`; undefined answers it 503. */
  restorer?: Restorer;
  /** The tenant's credit for `GET status` (the credit monitor); undefined drops the field. */
  credit?(
    tenant: string,
    signal: AbortSignal,
  ): Promise<{ balance: string; burn_rate_per_hour: string; depletes_at: string | null } | undefined>;
  /** Restart and update (the maintenance journal); without it those routes answer 503. */
  maintenance?: Maintenance;
  /** Applied callbacks (the lifecycle's `callback-applied`), streamed to the lease's watchers. */
  callbacks?: FrameSources["callbacks"];
  /** The event stream's hub, when the root shares it (credit notices); otherwise the API makes its own. */
  hub?: EventHub;
  /** Deadline of one tenant request, body upload and backend reads included (default 30 s). */
  requestTimeoutMs?: number;
  leaseReads?: Partial<
    Pick<TenantLeaseReadsOptions, "ttlMs" | "blockTtlMs" | "concurrency" | "queue" | "timeoutMs">
  >;
  /** New blocks from the chain's event feed: chain reads are then reused until the next one. */
  blocks?: BlockSignal;
  /** Event stream caps and timings (tests shrink them; defaults are the documented ones). */
  events?: Partial<Pick<EventHubOptions, "perLease" | "total" | "bufferSize" | "maxLeases">>;
  eventTimings?: Partial<EventTimings>;
  /** Where the tenant API's own counters register (none when absent). */
  registry?: Registry;
}

export interface TenantContext {
  deps: TenantApiDeps;
  auth: TenantAuth;
  leases: TenantLeaseReads;
  /**
   * The backend's provision record behind `GET status` by lease, shared by concurrent
   * requests and reused (provisionReadTtl), so tenants polling with a fresh token on every
   * request do not turn every poll into a backend call.
   */
  statusReads: Coalescer<ProvisionRead>;
  requestTimeoutMs: number;
  logger: Logger;
  /** Tenant answers a backend's off-contract answer turned into a 502 (fred_backend_malformed_error_body_total). */
  badGateways: Counter;
  /** Upload outcomes and dropped event frames (api-counters.ts). */
  counters: TenantCounters;
}

export function tenantContext(deps: TenantApiDeps): TenantContext {
  const logger = deps.logger;
  return {
    deps,
    logger,
    requestTimeoutMs: deps.requestTimeoutMs ?? 30_000,
    badGateways: new Counter({
      name: "fred_backend_malformed_error_body_total",
      help: "Tenant reads answered 502 because the lease's backend answered off its contract",
      registers: deps.registry === undefined ? [] : [deps.registry],
    }),
    counters: tenantCounters(deps.registry),
    auth: new TenantAuth({
      clock: deps.clock,
      bech32Prefix: deps.config.bech32Prefix,
      tokens: deps.tokens,
      logger,
      ...(deps.config.tenantRateLimitRps > 0
        ? {
            tenantLimit: new RateBuckets(
              deps.config.tenantRateLimitRps,
              deps.config.tenantRateLimitBurst,
              deps.clock,
              { idleMs: 5 * 60_000 },
            ),
          }
        : {}),
    }),
    statusReads: provisionReads({
      clock: deps.clock,
      transitionalMs: deps.leaseReads?.ttlMs ?? 1_000,
      callbacks: deps.callbacks,
    }),
    leases: new TenantLeaseReads({
      chain: deps.chain,
      clock: deps.clock,
      providerUuid: deps.config.providerUuid,
      logger,
      ...deps.leaseReads,
      ...(deps.blocks === undefined ? {} : { blocks: deps.blocks }),
    }),
  };
}

export interface AuthorizedLease {
  uuid: string;
  claims: TokenClaims;
  lease: ChainLease;
}

/**
 * Every lease endpoint's preamble, in the reference's order: the path UUID (400), the
 * token (401), the chain's lease (404 / 403 / 500).
 */
export async function authorizeLease(
  ctx: TenantContext,
  req: FastifyRequest,
  reply: FastifyReply,
  need: AuthRequirement,
  state?: LeaseStateName,
): Promise<AuthorizedLease> {
  const uuid = leaseUuidParam(req);
  const claims = await ctx.auth.authenticate(req, reply, uuid, need);
  return { uuid, claims, lease: await ctx.leases.owned(claims, state) };
}

/** A handler's answer: the wrapper writes it unless the deadline already answered. */
export interface Answer {
  status: number;
  body?: unknown;
  /** The body already serialized (JSON.stringify's output): sent as it is. */
  json?: string;
}

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * One tenant request's lifetime: an AbortSignal that fires when the client goes away or
 * the request deadline passes (backend and chain reads take it, so abandoned work stops),
 * and `run`, which answers 503 "request timeout" when the deadline wins.
 * The controller is made only when a handler asks for the signal, and `run` is told of an
 * abort directly rather than through an event listener: most requests end before either
 * could matter, and both cost an allocation and an event dispatch on every request.
 */
export class RequestScope {
  #controller: AbortController | undefined;
  readonly #cancelTimer: () => void;
  /** Why the request was abandoned (set once, by the deadline or the client's close). */
  #reason: Error | undefined;
  #expired = false;
  #done = false;
  #onAbort: ((reason: Error) => void) | undefined;

  constructor(reply: FastifyReply, clock: Clock, deadlineMs: number) {
    this.#cancelTimer = clock.setTimer(deadlineMs, () => {
      this.#expired = true;
      this.#abort(refuse.timeout());
    });
    // After the answer is written nothing of this request is left to stop: skipping the
    // abort there spares an Error and an event dispatch on every request.
    reply.raw.once("close", () => {
      this.#cancelTimer();
      if (!this.#done) this.#abort(new Error("client went away"));
    });
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  get expired(): boolean {
    return this.#expired;
  }

  /**
   * Runs `work`; if the deadline passes first, rejects with the 503 timeout envelope.
   * One promise settled by whichever comes first (not a race of two): this runs on every
   * tenant request. The abandoned work's own later failure lands in its handler, so it
   * never goes unhandled.
   */
  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#reason !== undefined) return Promise.reject(this.#failure(this.#reason));
    return new Promise<T>((resolve, reject) => {
      this.#onAbort = (reason) => reject(this.#failure(reason));
      work().then(
        (value) => {
          this.#onAbort = undefined;
          resolve(value);
        },
        (err: unknown) => {
          this.#onAbort = undefined;
          reject(err);
        },
      );
    });
  }

  /** Stops the deadline timer once the answer is written; the request's signal then stays unaborted. */
  done(): void {
    this.#done = true;
    this.#cancelTimer();
  }

  #abort(reason: Error): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.#onAbort?.(reason);
  }

  #failure(reason: Error): Error {
    return this.#expired ? refuse.timeout() : reason;
  }
}

export type TenantHandler = (
  req: FastifyRequest,
  reply: FastifyReply,
  scope: RequestScope,
) => Promise<Answer>;

/**
 * Wraps a tenant handler: one RequestScope (deadline + client-gone signal), the one error
 * edge, and `Cache-Control: no-store` (answers are per tenant and change with state).
 */
export function tenantRoute(ctx: TenantContext, handler: TenantHandler): RouteHandlerMethod {
  return async (req, reply) => {
    const scope = new RequestScope(reply, ctx.deps.clock, ctx.requestTimeoutMs);
    reply.header("cache-control", "no-store");
    try {
      const answer = await scope.run(() => handler(req, reply, scope));
      if (!reply.sent) {
        reply.code(answer.status);
        if (answer.json !== undefined) return reply.type(JSON_TYPE).send(answer.json);
        if (answer.body === undefined) return reply.send();
        return reply.send(answer.body);
      }
      return reply;
    } catch (thrown) {
      // The maintenance service says why it refused; the tenant's wording is this edge's.
      const err = maintenanceAnswer(thrown);
      if (err instanceof ApiError && err.status === 502) ctx.badGateways.inc();
      return sendApiError(reply, err, ctx.logger);
    } finally {
      scope.done();
    }
  };
}
