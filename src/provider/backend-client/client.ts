import { createHash } from "node:crypto";
import {
  BrokenCircuitError,
  type CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleType,
} from "cockatiel";
import type WebSocket from "ws";
import type { z } from "zod";
import {
  type BackendStats,
  healthySchema,
  INVENTORIES,
  LEASE_READS,
  type LeaseInfo,
  type LeaseRead,
  type LeaseUsageRow,
  LIMITS,
  LOG_STREAM,
  type LogStreamEvent,
  leasePath,
  MUTATION_ACCEPTED,
  type Mutation,
  type MutationBodies,
  mutationPath,
  PATHS,
  type Page,
  type ProvisionEntry,
  type ProvisionInfoBody,
  provisionsPageSchema,
  QUERY,
  RESPONSE_CAPS,
  type ReleaseInfoBody,
  statsSchema,
  type UsageBody,
} from "../../core/backend-contract/index.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { ExecQuery } from "../../core/exec-channel.ts";
import type { BackendConfig } from "../config/index.ts";
import { decodeBody } from "./decode.ts";
import { openExecSocket } from "./exec.ts";
import {
  BackendTransport,
  classifyMutation,
  countsAsFailure,
  type ExtraRefusals,
  isUnsupported,
  type MutationOutcome,
  type RawResponse,
  type SendInput,
} from "./http.ts";
import { logStreamEvents } from "./log-stream.ts";
import { type BackendCallObserver, silentCalls } from "./metrics.ts";

/**
 * The typed client providerd uses for one backend. Mutations answer with a
 * MutationOutcome (accepted / refused / ambiguous / not-sent) and never throw for a
 * backend's answer; reads return decoded values or throw FredError (ERR_BACKEND_*).
 * Paths, bodies and response readers are the backend contract's (src/core/backend-contract).
 */
/** What each per-lease read decodes to (TypeScript cannot correlate the table's entries itself). */
type LeaseReadResult = { [R in LeaseRead]: z.output<(typeof LEASE_READS)[R]["schema"]> };

/** The `operation` label of each per-lease read and inventory (fred_backend_requests_total). */
const LEASE_READ_OPERATIONS: Record<LeaseRead, string> = {
  info: "info",
  provisions: "provision_info",
  releases: "releases",
  logs: "logs",
  usage: "usage",
};
const INVENTORY_OPERATIONS: Record<keyof typeof INVENTORIES, string> = {
  provisions: "list",
  retentions: "list_retentions",
  usage: "list_usage",
};

/** Hard stop for a paginated walk, so a looping cursor cannot spin forever. */
const MAX_PAGES = 10_000;

export interface ProvisionRequest {
  leaseUuid: string;
  tenant: string;
  providerUuid: string;
  items: readonly { sku: string; quantity: number; serviceName?: string; customDomain?: string }[];
  callbackUrl: string;
  lifecycleCallbackUrl: string;
  payload?: Uint8Array;
  payloadHash?: string;
}

/** A restart or update as the journal admitted it. */
export interface MaintenanceCommand {
  leaseUuid: string;
  maintenanceId: string;
  /** The lease's lifecycle callback URL: the completion comes back on it. */
  callbackUrl: string;
  /** RFC 3339 UTC, the journal's stamp; the backend echoes it on the completion. */
  admittedAt: string;
}

/**
 * Maintenance answers that are definite refusals: 404 (not provisioned) and 409
 * maintenance_expired (the command is too old to run), besides the common ones.
 */
const MAINTENANCE_REFUSALS: ExtraRefusals = { 404: [undefined], 409: ["maintenance_expired"] };

function maintenanceBody(req: MaintenanceCommand) {
  return {
    lease_uuid: req.leaseUuid,
    maintenance_id: req.maintenanceId,
    callback_url: req.callbackUrl,
    admitted_at: req.admittedAt,
  };
}

export type StoragePage<T> = Page<T> & { storageId: string };

export interface Inventory {
  /** The storage identity every inventory page carried. */
  storageId: string;
  provisions: ProvisionEntry[];
  retentions: string[];
}

export interface BackendClientOptions {
  backend: BackendConfig;
  secret: string;
  storageId: string | undefined;
  clock?: Clock;
  /** Consecutive counted failures that open the circuit (reference: 5). */
  breakerThreshold?: number;
  /** How long the circuit stays open before one trial request (reference: 60 s). */
  halfOpenAfterMs?: number;
  /** Where each call's status and latency are reported (metrics.ts). */
  observe?: BackendCallObserver;
}

class CountedFailure extends Error {
  constructor(readonly response: RawResponse) {
    super(`counted failure ${response.status}`);
  }
}

export class BackendClient {
  readonly name: string;
  readonly backend: BackendConfig;
  readonly #transport: BackendTransport;
  readonly #breaker: CircuitBreakerPolicy;
  readonly #clock: Clock;
  readonly #observe: BackendCallObserver;

  private constructor(opts: BackendClientOptions, transport: BackendTransport) {
    this.#clock = opts.clock ?? systemClock;
    this.#observe = opts.observe ?? silentCalls;
    this.name = opts.backend.name;
    this.backend = opts.backend;
    this.#transport = transport;
    this.#breaker = circuitBreaker(
      handleType(CountedFailure).orType(FredError, (e) => e.retryable || e.code === "ERR_BACKEND_IDENTITY"),
      {
        halfOpenAfter: opts.halfOpenAfterMs ?? 60_000,
        breaker: new ConsecutiveBreaker(opts.breakerThreshold ?? 5),
      },
    );
  }

  static async create(opts: BackendClientOptions): Promise<BackendClient> {
    const transport = await BackendTransport.create({
      backend: opts.backend,
      secret: opts.secret,
      storageId: opts.storageId,
      ...(opts.clock === undefined ? {} : { clock: opts.clock }),
    });
    return new BackendClient(opts, transport);
  }

  get storageId(): string | undefined {
    return this.#transport.storageId;
  }

  /** The breaker's state: "closed" (requests flow), "open" (nothing is sent), "half-open" (one trial). */
  get circuitState(): "closed" | "open" | "half-open" | "isolated" {
    const names = {
      [CircuitState.Closed]: "closed",
      [CircuitState.Open]: "open",
      [CircuitState.HalfOpen]: "half-open",
      [CircuitState.Isolated]: "isolated",
    } as const;
    return names[this.#breaker.state];
  }

  async close(): Promise<void> {
    await this.#transport.close();
  }

  /** A shell session on this backend: the open WebSocket (see exec.ts). Not through the breaker: one session's refusal says nothing of the backend's health. */
  openExec(leaseUuid: string, target: ExecQuery, signal: AbortSignal): Promise<WebSocket> {
    if (this.backend.fenced) {
      return Promise.reject(
        new FredError("ERR_BACKEND_FENCED", `backend ${this.name} is fenced; nothing is sent to it`),
      );
    }
    return openExecSocket(this.#transport, this.#clock, leaseUuid, target, signal);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * Sends through the breaker; a counted failure status still returns its response. The one
   * place every request passes: each is reported to the observer as `operation`.
   */
  async #send(input: SendInput, operation: string): Promise<RawResponse> {
    if (this.backend.fenced) {
      throw new FredError("ERR_BACKEND_FENCED", `backend ${this.name} is fenced; nothing is sent to it`);
    }
    const started = performance.now();
    let status: number | "error" = "error";
    try {
      return await this.#breaker.execute(async () => {
        const res = await this.#transport.send(input);
        status = res.status;
        if (countsAsFailure(res.status, res.body)) throw new CountedFailure(res);
        return res;
      });
    } catch (err) {
      if (err instanceof CountedFailure) return err.response;
      if (err instanceof BrokenCircuitError) {
        throw new FredError("ERR_BACKEND_CIRCUIT_OPEN", `backend ${this.name} circuit is open`, {
          retryable: true,
        });
      }
      throw err;
    } finally {
      this.#observe.call(this.name, operation, status, (performance.now() - started) / 1000);
    }
  }

  /** `decodeBody`, with an undecodable answer reported to the observer. */
  #decode<S extends z.ZodType>(schema: S, body: Buffer, max: number, what: string): z.output<S> {
    try {
      return decodeBody(schema, body, max, this.name, what);
    } catch (err) {
      this.#observe.malformed(this.name);
      throw err;
    }
  }

  async #mutate<Op extends Mutation>(
    op: Op,
    body: MutationBodies[Op],
    signal?: AbortSignal,
    refusals?: ExtraRefusals,
  ): Promise<MutationOutcome> {
    const sid = this.storageId;
    if (this.backend.fenced)
      return { kind: "not-sent", reason: "fenced", detail: `backend ${this.name} is fenced` };
    if (sid === undefined) {
      return {
        kind: "not-sent",
        reason: "not-pinned",
        detail: `backend ${this.name} has no pinned storage ID`,
      };
    }
    let res: RawResponse;
    try {
      const path = mutationPath(op, sid);
      res = await this.#send(
        withSignal({ method: "POST", path, body, maxBytes: RESPONSE_CAPS.mutation }, signal),
        op,
      );
    } catch (err) {
      return mutationFailure(err);
    }
    const outcome = classifyMutation(res.status, MUTATION_ACCEPTED[op], res.body, refusals);
    if (outcome.kind === "ambiguous" && outcome.reason === "malformed") this.#observe.malformed(this.name);
    if (outcome.kind === "refused" && outcome.code === "insufficient_resources")
      this.#observe.insufficientResources(this.name);
    return outcome;
  }

  provision(req: ProvisionRequest, signal?: AbortSignal): Promise<MutationOutcome> {
    const body: MutationBodies["provision"] = {
      lease_uuid: req.leaseUuid,
      tenant: req.tenant,
      provider_uuid: req.providerUuid,
      items: itemsBody(req.items),
      callback_url: req.callbackUrl,
      lifecycle_callback_url: req.lifecycleCallbackUrl,
    };
    if (req.payload !== undefined) {
      body.payload = Buffer.from(req.payload).toString("base64");
      if (req.payloadHash !== undefined) body.payload_hash = req.payloadHash;
    }
    return this.#mutate("provision", body, signal);
  }

  deprovision(leaseUuid: string, signal?: AbortSignal): Promise<MutationOutcome> {
    return this.#mutate("deprovision", { lease_uuid: leaseUuid }, signal);
  }

  /** POST /restart: the journaled command, resent unchanged (same id and stamp) on every retry. */
  restart(req: MaintenanceCommand, signal?: AbortSignal): Promise<MutationOutcome> {
    return this.#mutate("restart", maintenanceBody(req), signal, MAINTENANCE_REFUSALS);
  }

  /** POST /update: as restart, with the new manifest and its SHA-256. */
  update(req: MaintenanceCommand & { payload: Uint8Array }, signal?: AbortSignal): Promise<MutationOutcome> {
    const body = {
      ...maintenanceBody(req),
      payload: Buffer.from(req.payload).toString("base64"),
      payload_hash: createHash("sha256").update(req.payload).digest("hex"),
    };
    return this.#mutate("update", body, signal, MAINTENANCE_REFUSALS);
  }

  restore(
    req: Omit<ProvisionRequest, "payload" | "payloadHash"> & { fromLeaseUuid: string },
    signal?: AbortSignal,
  ): Promise<MutationOutcome> {
    const body = {
      lease_uuid: req.leaseUuid,
      from_lease_uuid: req.fromLeaseUuid,
      tenant: req.tenant,
      provider_uuid: req.providerUuid,
      items: itemsBody(req.items),
      callback_url: req.callbackUrl,
      lifecycle_callback_url: req.lifecycleCallbackUrl,
    };
    return this.#mutate("restore", body, signal);
  }

  reconcileCustomDomain(
    leaseUuid: string,
    items: ProvisionRequest["items"],
    signal?: AbortSignal,
  ): Promise<MutationOutcome> {
    return this.#mutate(
      "reconcile_custom_domain",
      { lease_uuid: leaseUuid, items: itemsBody(items) },
      signal,
    );
  }

  /** GET helper: 200 → response; 404 → undefined when `allow404`; else ERR_BACKEND_STATUS. */
  async #readResponse(
    input: SendInput,
    operation: string,
    allow404 = false,
  ): Promise<RawResponse | undefined> {
    const res = await this.#send(input, operation);
    if (res.status === 200) return res;
    if (res.status === 404 && allow404) return undefined;
    if (res.status === 501 && isUnsupported(res.body)) {
      throw new FredError("ERR_BACKEND_UNSUPPORTED", `backend ${this.name} does not support ${input.path}`);
    }
    throw new FredError(
      "ERR_BACKEND_STATUS",
      `backend ${this.name} answered ${res.status} to ${input.path}`,
      {
        retryable: res.status >= 500,
        details: { status: res.status },
      },
    );
  }

  /** A per-lease read (`GET /{read}/{uuid}`): the decoded body, or undefined on 404. */
  async #leaseRead<R extends LeaseRead>(
    read: R,
    leaseUuid: string,
    signal?: AbortSignal,
    query?: Record<string, string>,
  ): Promise<LeaseReadResult[R] | undefined> {
    const { schema, maxBytes, what } = LEASE_READS[read];
    const input: SendInput = { method: "GET", path: leasePath(read, leaseUuid), maxBytes };
    if (query !== undefined) input.query = query;
    const res = await this.#readResponse(withSignal(input, signal), LEASE_READ_OPERATIONS[read], true);
    return res === undefined
      ? undefined
      : (this.#decode(schema, res.body, maxBytes, what) as LeaseReadResult[R]);
  }

  /** One inventory page and the storage identity it came from (`T`: the inventory's row). */
  async #page<T>(
    inventory: keyof typeof INVENTORIES,
    cursor: string | undefined,
    signal?: AbortSignal,
  ): Promise<StoragePage<T>> {
    const { schema, maxBytes } = INVENTORIES[inventory];
    const query: Record<string, string> = { [QUERY.limit]: String(LIMITS.inventoryPage) };
    if (cursor !== undefined) query[QUERY.continue] = cursor;
    const input: SendInput = { method: "GET", path: PATHS[inventory], query, maxBytes };
    const res = (await this.#readResponse(withSignal(input, signal), INVENTORY_OPERATIONS[inventory]))!;
    const page = this.#decode(schema, res.body, maxBytes, inventory) as Page<T>;
    return { ...page, storageId: res.storageId };
  }

  provisionsPage(cursor: string | undefined, signal?: AbortSignal): Promise<StoragePage<ProvisionEntry>> {
    return this.#page("provisions", cursor, signal);
  }

  retentionsPage(cursor: string | undefined, signal?: AbortSignal): Promise<StoragePage<string>> {
    return this.#page("retentions", cursor, signal);
  }

  /**
   * Both complete inventories. Every page must come from one storage identity; any
   * failure mid-walk fails the whole read (a partial inventory is never returned).
   * `onPage` is called as each page arrives (the sweep's deadline counts from the last one).
   */
  async inventory(signal?: AbortSignal, onPage?: () => void): Promise<Inventory> {
    const seen = <P>(page: P): P => {
      onPage?.();
      return page;
    };
    const provisions = await walk((c) => this.provisionsPage(c, signal).then(seen), this.name, "provisions");
    const retentions = await walk((c) => this.retentionsPage(c, signal).then(seen), this.name, "retentions");
    if (provisions.storageId !== retentions.storageId) {
      throw new FredError(
        "ERR_BACKEND_IDENTITY",
        `backend ${this.name} changed storage identity between inventories`,
      );
    }
    return { storageId: provisions.storageId, provisions: provisions.items, retentions: retentions.items };
  }

  async stats(signal?: AbortSignal): Promise<BackendStats> {
    const cap = RESPONSE_CAPS.stats;
    const res = await this.#readResponse(
      withSignal({ method: "GET", path: PATHS.stats, maxBytes: cap }, signal),
      "stats",
    );
    return this.#decode(statsSchema, res!.body, cap, "stats");
  }

  /** GET /provisions/{uuid}: the backend's diagnostics record; undefined on 404. */
  provisionInfo(
    leaseUuid: string,
    signal?: AbortSignal,
  ): Promise<(ProvisionInfoBody & Record<string, unknown>) | undefined> {
    return this.#leaseRead("provisions", leaseUuid, signal);
  }

  /**
   * GET /logs/{uuid}?follow=true&tail=N: the lease's log events as the backend streams
   * them (read as they arrive, never whole); undefined on 404. Any other refusal throws
   * ERR_BACKEND_STATUS with the status (501: the backend cannot stream logs). Held-open
   * streams do not pass the circuit breaker (a quiet stream is not a failure); a fenced
   * backend is not asked. `signal` (the tenant left) ends the stream.
   */
  async followLogs(
    leaseUuid: string,
    tail: number,
    signal: AbortSignal,
  ): Promise<AsyncGenerator<LogStreamEvent> | undefined> {
    if (this.backend.fenced) {
      throw new FredError("ERR_BACKEND_FENCED", `backend ${this.name} is fenced; nothing is sent to it`);
    }
    const started = performance.now();
    let res: Awaited<ReturnType<BackendTransport["stream"]>>;
    try {
      res = await this.#transport.stream({
        path: leasePath("logs", leaseUuid),
        query: { [QUERY.follow]: "true", [QUERY.tail]: String(tail) },
        idleMs: LOG_STREAM.idleMs,
        maxErrorBytes: 64 * 1024,
        signal,
      });
    } catch (err) {
      this.#observe.call(this.name, "logs_follow", "error", (performance.now() - started) / 1000);
      throw err;
    }
    // Timed to the answer's headers: the stream itself lasts as long as the tenant watches.
    this.#observe.call(this.name, "logs_follow", res.status, (performance.now() - started) / 1000);
    if ("stream" in res) return logStreamEvents(res.stream, this.name);
    if (res.status === 404) return undefined;
    throw new FredError("ERR_BACKEND_STATUS", `backend ${this.name} answered ${res.status} to a log follow`, {
      retryable: res.status >= 500 && res.status !== 501,
      details: { status: res.status },
    });
  }

  /** GET /logs/{uuid}?tail=N: log text per "<service>/<instance>" key; undefined on 404. */
  logs(leaseUuid: string, tail: number, signal?: AbortSignal): Promise<Record<string, string> | undefined> {
    return this.#leaseRead("logs", leaseUuid, signal, { [QUERY.tail]: String(tail) });
  }

  /** GET /releases/{uuid}: the release history, relayed as the backend's JSON objects. */
  releases(
    leaseUuid: string,
    signal?: AbortSignal,
  ): Promise<(ReleaseInfoBody & Record<string, unknown>)[] | undefined> {
    return this.#leaseRead("releases", leaseUuid, signal);
  }

  /** GET /usage/{uuid}: what the lease uses now and over the last hour; undefined on 404. */
  usage(leaseUuid: string, signal?: AbortSignal): Promise<UsageBody | undefined> {
    return this.#leaseRead("usage", leaseUuid, signal);
  }

  /**
   * GET /usage walked to its end: every lease the backend samples with its instances'
   * current figures (no history), and the backend's sampling interval. A backend that
   * cannot sample: ERR_BACKEND_UNSUPPORTED. `onPage` as for `inventory`.
   */
  async currentUsage(
    signal?: AbortSignal,
    onPage?: () => void,
  ): Promise<{ leases: LeaseUsageRow[]; sampleIntervalSeconds: number }> {
    let sampleIntervalSeconds = 0;
    const { items } = await walk(
      async (c) => {
        const page = (await this.#page<LeaseUsageRow>("usage", c, signal)) as StoragePage<LeaseUsageRow> & {
          sampleIntervalSeconds: number;
        };
        sampleIntervalSeconds = page.sampleIntervalSeconds;
        onPage?.();
        return page;
      },
      this.name,
      "usage",
    );
    return { leases: items, sampleIntervalSeconds };
  }

  /** GET /info/{uuid}: connection details; undefined on 404 (not provisioned or not ready). */
  info(leaseUuid: string, signal?: AbortSignal): Promise<LeaseInfo | undefined> {
    return this.#leaseRead("info", leaseUuid, signal);
  }

  /** GET /health: true only for 200 {"status":"healthy"}. */
  async healthy(signal?: AbortSignal): Promise<boolean> {
    const cap = RESPONSE_CAPS.health;
    const res = await this.#send(
      withSignal({ method: "GET", path: PATHS.health, maxBytes: cap }, signal),
      "health",
    );
    if (res.status !== 200) return false;
    try {
      decodeBody(healthySchema, res.body, cap, this.name, "health");
      return true;
    } catch {
      return false;
    }
  }

  /** Reads the inventories for `lease_uuid` filters (≤ 100 per call). */
  async provisionsFor(leaseUuids: readonly string[], signal?: AbortSignal): Promise<ProvisionEntry[]> {
    if (leaseUuids.length === 0 || leaseUuids.length > LIMITS.leaseFilters) {
      throw new FredError("ERR_BACKEND_QUERY", `between 1 and ${LIMITS.leaseFilters} lease UUIDs per lookup`);
    }
    const cap = RESPONSE_CAPS.provisionsPage;
    const query = { [QUERY.leaseUuid]: leaseUuids };
    const res = await this.#readResponse(
      withSignal({ method: "GET", path: PATHS.provisions, query, maxBytes: cap }, signal),
      "list",
    );
    return this.#decode(provisionsPageSchema, res!.body, cap, "provisions").items;
  }
}

function withSignal(input: SendInput, signal: AbortSignal | undefined): SendInput {
  return signal === undefined ? input : { ...input, signal };
}

function itemsBody(items: ProvisionRequest["items"]) {
  return items.map((i) => ({
    sku: i.sku,
    quantity: i.quantity,
    ...(i.serviceName ? { service_name: i.serviceName } : {}),
    ...(i.customDomain ? { custom_domain: i.customDomain } : {}),
  }));
}

async function walk<T>(
  page: (cursor: string | undefined) => Promise<StoragePage<T>>,
  backend: string,
  what: string,
): Promise<{ items: T[]; storageId: string }> {
  const out: T[] = [];
  let cursor: string | undefined;
  let storageId: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const p = await page(cursor);
    if (storageId !== undefined && p.storageId !== storageId) {
      throw new FredError("ERR_BACKEND_IDENTITY", `backend ${backend} changed storage identity mid-${what}`);
    }
    storageId = p.storageId;
    out.push(...p.items);
    if (p.continueToken === undefined) return { items: out, storageId };
    if (p.continueToken === cursor) break;
    cursor = p.continueToken;
  }
  throw new FredError("ERR_BACKEND_MALFORMED", `backend ${backend}: ${what} pagination does not terminate`, {
    retryable: true,
  });
}

/** Connect errors after which no byte of a request can have reached the backend. */
const NEVER_CONNECTED: ReadonlySet<unknown> = new Set(["ECONNREFUSED", "ENOENT"]);

function mutationFailure(err: unknown): MutationOutcome {
  if (!(err instanceof FredError)) {
    return {
      kind: "ambiguous",
      reason: "transport",
      detail: err instanceof Error ? err.message : String(err),
    };
  }
  switch (err.code) {
    case "ERR_BACKEND_CIRCUIT_OPEN":
      return { kind: "not-sent", reason: "circuit-open", detail: err.message };
    case "ERR_BACKEND_FENCED":
      return { kind: "not-sent", reason: "fenced", detail: err.message };
    case "ERR_BACKEND_TIMEOUT":
      return { kind: "ambiguous", reason: "timeout", detail: err.message };
    case "ERR_BACKEND_IDENTITY":
      return { kind: "ambiguous", reason: "identity", detail: err.message };
    case "ERR_BACKEND_TOO_LARGE":
      return { kind: "ambiguous", reason: "too-large", detail: err.message };
    case "ERR_BACKEND_TRANSPORT":
      // A refused connection never carried the request (a restarting backend; on a Unix
      // socket also a missing socket file, ENOENT); any other transport failure may have
      // come after the backend read it.
      if (NEVER_CONNECTED.has((err.cause as { code?: unknown } | undefined)?.code))
        return { kind: "not-sent", reason: "connect-refused", detail: err.message };
      return { kind: "ambiguous", reason: "transport", detail: err.message };
    default:
      return { kind: "ambiguous", reason: "transport", detail: err.message };
  }
}
