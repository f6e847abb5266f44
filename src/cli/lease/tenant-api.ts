import { randomInt, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { Agent, fetch } from "undici";
import WebSocket from "ws";
import { addressFromPubkey } from "../../auth/address.ts";
import { compressedPubkey } from "../../auth/keys.ts";
import { mintTenantToken } from "../../auth/token.ts";
import { retry } from "../../core/async/index.ts";
import { commandClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";

/**
 * The tenant side of providerd's API for the `fred lease` commands: every request carries
 * a freshly minted ADR-036 token (so replay-protected reads never reuse one), a logical
 * command keeps one `Idempotency-Key` across its retries, and an answer the server asks
 * to retry (429/503 with `Retry-After`, or a lost connection) is tried again a few times.
 * A refusal becomes a FredError whose message carries the API's `reason` and a hint.
 */
export interface ApiAnswer {
  status: number;
  body: Record<string, unknown>;
}

export interface ApiRequest {
  method?: "GET" | "POST";
  /** Bytes sent as they are (uploads) or a JSON body. */
  body?: Uint8Array | Record<string, unknown>;
  /** Mint a payload token for this meta_hash (uploads) instead of an access token. */
  metaHash?: string;
  /** Sent as `Idempotency-Key`; one per logical command, reused by every retry. */
  idempotencyKey?: string;
  /** Statuses that are a normal answer here, not an error (e.g. 404 while polling). */
  accept?: readonly number[];
}

/** What to do about each refusal reason a tenant can meet, in a few words. */
const HINTS: Record<string, string> = {
  billing_only: "this lease's SKU is billing-only: there is nothing to deploy",
  source_busy: "the source lease is busy with another command; try again shortly",
  target_busy: "the target lease is busy with another command; try again shortly",
  target_not_pending: "restore into a new PENDING lease (fred lease create first)",
  demote_exceeds_tier: "the retained data does not fit the smaller tier: pick a larger --sku",
  maintenance_expired: "the backend no longer holds this command: send a new one",
  maintenance_capacity_reserved: "the provider is busy with other maintenance; try again in a second",
  backend_storage_lost: "the provider lost the host this lease ran on: open a new lease",
};

const RETRY_STATUSES = new Set([429, 502, 503]);
const TRIES = 4;
/** The seconds a replay-protected token may carry: from 20 s back to 5 s ahead. */
const STAMP_BACK_S = 20;
const STAMP_SPAN = 26;
/** Refusals of a spent token retried, each with a token of another second. */
export const SPENT_TOKEN_RETRIES = 3;

export class TenantApi {
  readonly tenant: string;
  /** The seconds this process stamped on replay-protected tokens, within the window. */
  readonly #stamped = new Set<number>();

  /** Node's roots plus one CA (fred up's local one, or --ca-file), when one is given. */
  readonly #ca: string[] | undefined;
  readonly #dispatcher: Agent | undefined;

  constructor(
    readonly baseUrl: string,
    private readonly privateKey: Uint8Array,
    private readonly prefix = "manifest",
    extraCa?: string,
  ) {
    this.tenant = addressFromPubkey(compressedPubkey(privateKey), prefix);
    if (extraCa !== undefined) {
      this.#ca = [...rootCertificates, ...envExtraCa(), extraCa];
      this.#dispatcher = new Agent({ connect: { ca: this.#ca } });
    }
  }

  /** TLS options for the event stream's websocket (the same trust as the HTTP calls). */
  /**
   * A WebSocket to `path` (events, logs?follow, shell) carrying a token for the lease in
   * its Authorization header, trusting what the API's HTTPS requests trust. `unique: false`
   * reuses this second's token (streams that are not replay-protected reconnect with it).
   */
  webSocket(
    leaseUuid: string,
    path: string,
    o: { protocols?: string[]; unique?: boolean; perMessageDeflate?: boolean } = {},
  ): WebSocket {
    return new WebSocket(this.url(path).replace(/^http/, "ws"), o.protocols ?? [], {
      headers: { authorization: `Bearer ${this.token(leaseUuid, undefined, o.unique ?? true)}` },
      ...(o.perMessageDeflate === undefined ? {} : { perMessageDeflate: o.perMessageDeflate }),
      ...(this.#ca === undefined ? {} : { ca: this.#ca }),
    });
  }

  /** A new key for one logical command (UUIDv4, as the API requires). */
  static idempotencyKey(): string {
    return randomUUID();
  }

  /**
   * A token timestamp for the replay-protected calls. Tokens are stamped to the second and
   * signed deterministically, so one minted twice in a second is the same token, refused as
   * spent. So each is a second this process has not used yet, picked at random among the
   * ones the API accepts (up to 30 s old, 10 s ahead; kept inside with margins for clock
   * skew): fred processes of one tenant started together (two shells opened at once, a
   * script) rarely pick the same one, and a refusal is retried with another (a sequence
   * from a fixed start made processes started in one second collide on every token).
   * Past the window's seconds it counts up, as few calls per second ever need. The other
   * reads, which may reuse a token, take the current second.
   */
  #timestamp(unique: boolean): number {
    const now = Math.floor(Date.now() / 1000);
    if (!unique) return now;
    const low = now - STAMP_BACK_S;
    for (const used of this.#stamped) if (used < low) this.#stamped.delete(used);
    let stamp: number;
    if (this.#stamped.size >= STAMP_SPAN) {
      stamp = Math.max(...this.#stamped) + 1;
    } else {
      do stamp = low + randomInt(STAMP_SPAN);
      while (this.#stamped.has(stamp));
    }
    this.#stamped.add(stamp);
    return stamp;
  }

  token(leaseUuid: string, metaHash?: string, unique = true): string {
    return mintTenantToken({
      privateKey: this.privateKey,
      leaseUuid,
      timestamp: this.#timestamp(unique),
      prefix: this.prefix,
      ...(metaHash === undefined ? {} : { metaHash }),
    });
  }

  url(path: string): string {
    return new URL(path, this.baseUrl).toString();
  }

  async lease(leaseUuid: string, path: string, req: ApiRequest = {}): Promise<ApiAnswer> {
    // Replay protection covers every POST and the connection read.
    const spendsToken = req.method === "POST" || path === "connection";
    let refusals = 0;
    return retry(() => this.#once(leaseUuid, path, req, spendsToken), {
      clock: commandClock,
      attempts: TRIES,
      backoff: { initialMs: 500, maxMs: 4000 },
      retryable: (err) => {
        if (!(err instanceof FredError)) return false;
        if (err.retryable) return true;
        // Another fred process may have spent this very token (see #timestamp): a token of
        // another second settles that; refused SPENT_TOKEN_RETRIES more times, it is real.
        if (!spendsToken || refusals >= SPENT_TOKEN_RETRIES || err.details?.status !== 401) return false;
        refusals++;
        return true;
      },
    });
  }

  /** `GET /v1/provider`: who the provider is and what it accepts (no token needed). */
  async provider(): Promise<Record<string, unknown>> {
    const answer = await retry(() => this.#request("/v1/provider", {}, {}), {
      clock: commandClock,
      attempts: TRIES,
      backoff: { initialMs: 500, maxMs: 4000 },
      retryable: (err) => err instanceof FredError && err.retryable,
    });
    return answer.body;
  }

  #once(leaseUuid: string, path: string, req: ApiRequest, spendsToken: boolean): Promise<ApiAnswer> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.token(leaseUuid, req.metaHash, spendsToken)}`,
    };
    return this.#request(`/v1/leases/${leaseUuid}/${path}`, req, headers);
  }

  async #request(path: string, req: ApiRequest, headers: Record<string, string>): Promise<ApiAnswer> {
    if (req.idempotencyKey !== undefined) headers["idempotency-key"] = req.idempotencyKey;
    let body: Uint8Array | string | undefined;
    if (req.body instanceof Uint8Array) {
      body = req.body;
      headers["content-type"] = "application/octet-stream";
    } else if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers["content-type"] = "application/json";
    }
    let res: Awaited<ReturnType<typeof fetch>>;
    try {
      res = await fetch(this.url(path), {
        method: req.method ?? "GET",
        headers,
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(60_000),
        ...(this.#dispatcher === undefined ? {} : { dispatcher: this.#dispatcher }),
      });
    } catch (err) {
      const cause = causeText(err);
      // An untrusted certificate does not get better with retries; say what trusts it.
      const untrusted = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(cause);
      throw new FredError(
        "ERR_TENANT_API",
        `cannot reach the provider at ${this.baseUrl}: ${cause}${
          untrusted
            ? " (its certificate is not trusted: pass --ca-file <pem>; fred up's is <home>/tls/ca.pem)"
            : ""
        }`,
        { retryable: !untrusted, cause: err },
      );
    }
    const text = await res.text();
    const parsed = parseBody(text);
    if (res.ok || req.accept?.includes(res.status)) return { status: res.status, body: parsed };
    throw refusal(res.status, parsed, RETRY_STATUSES.has(res.status));
  }
}

/** NODE_EXTRA_CA_CERTS, which Node adds to its default trust but not to `rootCertificates`. */
function envExtraCa(): string[] {
  const path = process.env.NODE_EXTRA_CA_CERTS;
  if (path === undefined || path === "") return [];
  try {
    return [readFileSync(path, "utf8")];
  } catch {
    return [];
  }
}

function parseBody(text: string): Record<string, unknown> {
  if (text === "") return {};
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : { value: v };
  } catch {
    return { error: text.slice(0, 200) };
  }
}

function causeText(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

/** The API's envelope as an error: status, text, reason and what to do about it. */
export function refusal(status: number, body: Record<string, unknown>, retryable = false): FredError {
  const text = typeof body.error === "string" ? body.error : `HTTP ${status}`;
  const reason = typeof body.reason === "string" ? body.reason : undefined;
  const hint =
    (reason === undefined ? undefined : HINTS[reason]) ??
    (status === 401 ? "the token was refused: check the key and this machine's clock" : undefined) ??
    (status === 403 ? "this lease belongs to another tenant or provider" : undefined);
  const message = `${status} ${text}${reason === undefined ? "" : ` (${reason})`}${hint === undefined ? "" : `: ${hint}`}`;
  return new FredError("ERR_TENANT_API", message, {
    retryable,
    details: { status, ...(reason === undefined ? {} : { reason }), error: text },
  });
}
