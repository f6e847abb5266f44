import {
  BrokenCircuitError,
  type CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleType,
} from "cockatiel";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { parseStrictJson } from "../../core/strict-json.ts";
import type { BackendConfig } from "../config/index.ts";
import { classifyMutation, countsAsFailure, type MutationOutcome } from "./classify.ts";
import {
  type BackendStats,
  decodeInfo,
  decodeLogs,
  decodeProvisionInfo,
  decodeProvisionsPage,
  decodeReleases,
  decodeRetentionsPage,
  decodeStats,
  type LeaseInfo,
  type Page,
  type ProvisionEntry,
} from "./decode.ts";
import { BackendTransport, type RawResponse, type SendInput } from "./http.ts";

/**
 * The typed client providerd uses for one backend. Mutations answer with a
 * MutationOutcome (accepted / refused / ambiguous / not-sent) and never throw for a
 * backend's answer; reads return decoded values or throw FredError (ERR_BACKEND_*).
 */
const MiB = 1024 * 1024;
export const RESPONSE_CAPS = {
  provision: 1 * MiB,
  mutation: 1 * MiB,
  info: 1 * MiB,
  provisionsPage: 8 * MiB,
  retentionsPage: 1 * MiB,
  logs: 16 * MiB,
  releases: 8 * MiB,
  stats: 1 * MiB,
  health: 64 * 1024,
} as const;
export const INVENTORY_PAGE_LIMIT = 1000;
/** Hard stop for a paginated walk, so a looping cursor cannot spin forever. */
const MAX_PAGES = 10_000;

export interface ProvisionRequestBody {
  leaseUuid: string;
  tenant: string;
  providerUuid: string;
  items: readonly { sku: string; quantity: number; serviceName?: string; customDomain?: string }[];
  callbackUrl: string;
  lifecycleCallbackUrl: string;
  payload?: Uint8Array;
  payloadHash?: string;
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

  private constructor(opts: BackendClientOptions, transport: BackendTransport) {
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

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Sends through the breaker; a counted failure status still returns its response. */
  async #send(input: SendInput): Promise<RawResponse> {
    if (this.backend.fenced) {
      throw new FredError("ERR_BACKEND_FENCED", `backend ${this.name} is fenced; nothing is sent to it`);
    }
    try {
      return await this.#breaker.execute(async () => {
        const res = await this.#transport.send(input);
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
    }
  }

  async #mutate(op: string, expected: number, body: unknown, signal?: AbortSignal): Promise<MutationOutcome> {
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
      res = await this.#send({
        method: "POST",
        path: `/_fred/storage/${sid}/${op}`,
        body,
        maxBytes: RESPONSE_CAPS.mutation,
        ...(signal === undefined ? {} : { signal }),
      });
    } catch (err) {
      return mutationFailure(err);
    }
    return classifyMutation(res.status, expected, res.body);
  }

  provision(req: ProvisionRequestBody, signal?: AbortSignal): Promise<MutationOutcome> {
    const body: Record<string, unknown> = {
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
    return this.#mutate("provision", 202, body, signal);
  }

  deprovision(leaseUuid: string, signal?: AbortSignal): Promise<MutationOutcome> {
    return this.#mutate("deprovision", 200, { lease_uuid: leaseUuid }, signal);
  }

  restart(req: { leaseUuid: string; callbackUrl: string }, signal?: AbortSignal): Promise<MutationOutcome> {
    return this.#mutate("restart", 202, { lease_uuid: req.leaseUuid, callback_url: req.callbackUrl }, signal);
  }

  update(
    req: { leaseUuid: string; callbackUrl: string; payload: Uint8Array; payloadHash: string },
    signal?: AbortSignal,
  ): Promise<MutationOutcome> {
    const body = {
      lease_uuid: req.leaseUuid,
      callback_url: req.callbackUrl,
      payload: Buffer.from(req.payload).toString("base64"),
      payload_hash: req.payloadHash,
    };
    return this.#mutate("update", 202, body, signal);
  }

  restore(
    req: Omit<ProvisionRequestBody, "payload" | "payloadHash"> & { fromLeaseUuid: string },
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
    return this.#mutate("restore", 202, body, signal);
  }

  reconcileCustomDomain(
    leaseUuid: string,
    items: ProvisionRequestBody["items"],
    signal?: AbortSignal,
  ): Promise<MutationOutcome> {
    return this.#mutate(
      "reconcile_custom_domain",
      204,
      { lease_uuid: leaseUuid, items: itemsBody(items) },
      signal,
    );
  }

  /** GET helper: 200 → response; 404 → undefined when `allow404`; else ERR_BACKEND_STATUS. */
  async #readResponse(input: SendInput, allow404 = false): Promise<RawResponse | undefined> {
    const res = await this.#send(input);
    if (res.status === 200) return res;
    if (res.status === 404 && allow404) return undefined;
    throw new FredError(
      "ERR_BACKEND_STATUS",
      `backend ${this.name} answered ${res.status} to ${input.path}`,
      {
        retryable: res.status >= 500,
        details: { status: res.status },
      },
    );
  }

  async #read(input: SendInput, allow404 = false): Promise<Buffer | undefined> {
    return (await this.#readResponse(input, allow404))?.body;
  }

  async provisionsPage(
    cursor: string | undefined,
    signal?: AbortSignal,
  ): Promise<StoragePage<ProvisionEntry>> {
    const query: Record<string, string> = { limit: String(INVENTORY_PAGE_LIMIT) };
    if (cursor !== undefined) query.continue = cursor;
    const res = await this.#readResponse({
      method: "GET",
      path: "/provisions",
      query,
      maxBytes: RESPONSE_CAPS.provisionsPage,
      ...(signal === undefined ? {} : { signal }),
    });
    return {
      ...decodeProvisionsPage(res!.body, RESPONSE_CAPS.provisionsPage, this.name),
      storageId: res!.storageId,
    };
  }

  async retentionsPage(cursor: string | undefined, signal?: AbortSignal): Promise<StoragePage<string>> {
    const query: Record<string, string> = { limit: String(INVENTORY_PAGE_LIMIT) };
    if (cursor !== undefined) query.continue = cursor;
    const res = await this.#readResponse({
      method: "GET",
      path: "/retentions",
      query,
      maxBytes: RESPONSE_CAPS.retentionsPage,
      ...(signal === undefined ? {} : { signal }),
    });
    return {
      ...decodeRetentionsPage(res!.body, RESPONSE_CAPS.retentionsPage, this.name),
      storageId: res!.storageId,
    };
  }

  /**
   * Both complete inventories. Every page must come from one storage identity; any
   * failure mid-walk fails the whole read (a partial inventory is never returned).
   */
  async inventory(signal?: AbortSignal): Promise<Inventory> {
    const provisions = await walk((c) => this.provisionsPage(c, signal), this.name, "provisions");
    const retentions = await walk((c) => this.retentionsPage(c, signal), this.name, "retentions");
    if (provisions.storageId !== retentions.storageId) {
      throw new FredError(
        "ERR_BACKEND_IDENTITY",
        `backend ${this.name} changed storage identity between inventories`,
      );
    }
    return { storageId: provisions.storageId, provisions: provisions.items, retentions: retentions.items };
  }

  async stats(signal?: AbortSignal): Promise<BackendStats> {
    const body = await this.#read({
      method: "GET",
      path: "/stats",
      maxBytes: RESPONSE_CAPS.stats,
      ...(signal === undefined ? {} : { signal }),
    });
    return decodeStats(body!, RESPONSE_CAPS.stats, this.name);
  }

  /** GET /provisions/{uuid}: the backend's diagnostics record; undefined on 404. */
  async provisionInfo(leaseUuid: string, signal?: AbortSignal): Promise<Record<string, unknown> | undefined> {
    const body = await this.#read(
      this.#get(`/provisions/${leaseUuid}`, RESPONSE_CAPS.provision, signal),
      true,
    );
    return body === undefined ? undefined : decodeProvisionInfo(body, RESPONSE_CAPS.provision, this.name);
  }

  /** GET /logs/{uuid}?tail=N: log text per "<service>/<instance>" key; undefined on 404. */
  async logs(
    leaseUuid: string,
    tail: number,
    signal?: AbortSignal,
  ): Promise<Record<string, string> | undefined> {
    const input = this.#get(`/logs/${leaseUuid}`, RESPONSE_CAPS.logs, signal, { tail: String(tail) });
    const body = await this.#read(input, true);
    return body === undefined ? undefined : decodeLogs(body, RESPONSE_CAPS.logs, this.name);
  }

  /** GET /releases/{uuid}: the release history, relayed as the backend's JSON objects. */
  async releases(leaseUuid: string, signal?: AbortSignal): Promise<Record<string, unknown>[] | undefined> {
    const body = await this.#read(this.#get(`/releases/${leaseUuid}`, RESPONSE_CAPS.releases, signal), true);
    return body === undefined ? undefined : decodeReleases(body, RESPONSE_CAPS.releases, this.name);
  }

  /** GET /health: true only for 200 {"status":"healthy"}. */
  async healthy(signal?: AbortSignal): Promise<boolean> {
    const res = await this.#send(this.#get("/health", RESPONSE_CAPS.health, signal));
    if (res.status !== 200) return false;
    try {
      return (parseStrictJson(res.body, RESPONSE_CAPS.health) as { status?: unknown }).status === "healthy";
    } catch {
      return false;
    }
  }

  #get(path: string, maxBytes: number, signal?: AbortSignal, query?: Record<string, string>): SendInput {
    return {
      method: "GET",
      path,
      maxBytes,
      ...(query === undefined ? {} : { query }),
      ...(signal === undefined ? {} : { signal }),
    };
  }

  async info(leaseUuid: string, signal?: AbortSignal): Promise<LeaseInfo | undefined> {
    const body = await this.#read(
      {
        method: "GET",
        path: `/info/${leaseUuid}`,
        maxBytes: RESPONSE_CAPS.info,
        ...(signal === undefined ? {} : { signal }),
      },
      true,
    );
    return body === undefined ? undefined : decodeInfo(body, RESPONSE_CAPS.info, this.name);
  }

  /** Reads the inventories for `lease_uuid` filters (≤ 100 per call). */
  async provisionsFor(leaseUuids: readonly string[], signal?: AbortSignal): Promise<ProvisionEntry[]> {
    if (leaseUuids.length === 0 || leaseUuids.length > 100) {
      throw new FredError("ERR_BACKEND_QUERY", "between 1 and 100 lease UUIDs per lookup");
    }
    const body = await this.#read({
      method: "GET",
      path: "/provisions",
      query: { lease_uuid: leaseUuids },
      maxBytes: RESPONSE_CAPS.provisionsPage,
      ...(signal === undefined ? {} : { signal }),
    });
    return decodeProvisionsPage(body!, RESPONSE_CAPS.provisionsPage, this.name).items;
  }
}

function itemsBody(items: ProvisionRequestBody["items"]) {
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
    default:
      return { kind: "ambiguous", reason: "transport", detail: err.message };
  }
}
