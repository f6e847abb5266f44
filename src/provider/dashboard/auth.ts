import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { RateBuckets } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";

/**
 * Who may read the dashboard's `/api/` routes: a client whose certificate the operator
 * CA verified (mTLS: the TLS layer refuses any other connection, so every request that
 * arrives is verified), or a request bearing the operator token. Tokens are compared as
 * SHA-256 digests with timingSafeEqual, so neither the content nor the length of a guess
 * shows in the time taken. Failed attempts are limited per remote address: after a burst
 * of FAILURE_BURST, one a second; past that the address is answered 429 until it refills.
 */
const FAILURE_RPS = 1;
const FAILURE_BURST = 20;

export type AuthVerdict =
  | { ok: true }
  | { ok: false; status: 401 }
  | { ok: false; status: 429; retryAfterSeconds: number };

export interface OperatorAuthOptions {
  token: string;
  /** Client certificates are required and verified by the listener (operator_client_ca_file). */
  mtls: boolean;
  clock: Clock;
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

export class OperatorAuth {
  readonly #expected: Buffer;
  readonly #mtls: boolean;
  readonly #failures: RateBuckets;

  constructor(o: OperatorAuthOptions) {
    this.#expected = digest(o.token);
    this.#mtls = o.mtls;
    this.#failures = new RateBuckets(FAILURE_RPS, FAILURE_BURST, o.clock, { idleMs: 10 * 60_000 });
  }

  check(req: FastifyRequest): AuthVerdict {
    if (this.#mtls && isVerifiedClient(req)) return { ok: true };
    const header = req.headers.authorization;
    const match = typeof header === "string" ? /^Bearer ([^\s]+)$/i.exec(header.trim()) : null;
    if (match !== null && timingSafeEqual(digest(match[1] as string), this.#expected)) return { ok: true };
    const verdict = this.#failures.consume(req.socket.remoteAddress ?? "");
    return verdict.allowed
      ? { ok: false, status: 401 }
      : { ok: false, status: 429, retryAfterSeconds: verdict.retryAfterSeconds };
  }
}

function isVerifiedClient(req: FastifyRequest): boolean {
  const socket = req.socket as { authorized?: boolean };
  return socket.authorized === true;
}
