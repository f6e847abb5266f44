import { retry } from "../../core/async/index.ts";
import type { LifecycleDeps } from "./deps.ts";

/**
 * `lease_closed` / `lease_expired` (and an attempt found to belong to a lease that ended):
 * deprovision wherever the lease may be — its confirmed owner, the backend of an
 * unresolved attempt, every candidate of a conflict. Each backend gets a bounded number
 * of tries with doubling delays; a backend that still does not confirm is left to the
 * next recovery pass (the lease stays recorded).
 *
 * When the attempted backend accepts the deprovision, the attempt is retired. This is
 * positive evidence, not an inference: a backend built on our kit (src/backend/kit)
 * makes the close durable before answering 200 (`Journal.beginClose` + `durable()`),
 * and from then on the attempted operation cannot leave anything running there:
 *  - an operation still in progress is pre-empted in that same transaction and settled
 *    failed (its callback is queued);
 *  - a lease the backend never heard of gets a tombstone at once, a closing one gets it
 *    when teardown completes, and tombstones are never pruned;
 *  - a later provision under a new operation id is refused with 409 (tombstone, or the
 *    closing lease record), and a late copy of the attempted request itself matches the
 *    stored operation id or its receipt and is merely acknowledged, starting nothing.
 * So the attempt can only end in "failed" or "never started": keeping the row would
 * only make recovery and the timeout check chase a lease that is gone. A backend that
 * does not confirm (refusal, ambiguous answer, fenced, not configured) keeps the attempt:
 * its silence proves nothing. A backend outside our kit that ignored this contract could
 * still start a late workload; that is an orphan on an ended lease, which the periodic
 * reconciler's orphan pass tears down.
 */
export interface CloseRetry {
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_CLOSE_RETRY: CloseRetry = { attempts: 5, initialDelayMs: 1_000, maxDelayMs: 30_000 };

/** One try per backend: for periodic passes, which come back anyway. */
export const SINGLE_CLOSE_TRY: CloseRetry = { attempts: 1, initialDelayMs: 0, maxDelayMs: 0 };

export type CloseResult = {
  deprovisioned: string[];
  failed: string[];
  unknown: boolean;
  /** The backend whose attempt was retired after it accepted the deprovision. */
  retiredAttempt: string | undefined;
};

export class Closer {
  readonly #deps: LifecycleDeps;
  readonly #retry: CloseRetry;

  constructor(deps: LifecycleDeps, retry: CloseRetry = DEFAULT_CLOSE_RETRY) {
    this.#deps = deps;
    this.#retry = retry;
  }

  /** Backends that may hold the lease, from durable records only. */
  targets(leaseUuid: string): string[] {
    const out = new Set<string>();
    const placement = this.#deps.store.placement(leaseUuid);
    if (placement?.owner !== undefined) out.add(placement.owner);
    for (const c of placement?.candidates ?? []) out.add(c);
    const attempt = this.#deps.store.attemptFor(leaseUuid);
    if (attempt !== undefined) out.add(attempt.backend);
    return [...out].sort();
  }

  /** Call only for a lease that ended on chain, inside that lease's serial queue. */
  async close(leaseUuid: string, signal: AbortSignal): Promise<CloseResult> {
    const targets = this.targets(leaseUuid);
    const result: CloseResult = {
      deprovisioned: [],
      failed: [],
      unknown: targets.length === 0,
      retiredAttempt: undefined,
    };
    for (const backend of targets) {
      const ok = await this.#deprovisionOn(backend, leaseUuid, signal);
      (ok ? result.deprovisioned : result.failed).push(backend);
      if (ok && this.#deps.store.retireAttempt(leaseUuid, backend)) {
        result.retiredAttempt = backend;
        this.#deps.logger.info(
          { lease_uuid: leaseUuid, backend },
          "attempt retired: its backend accepted the deprovision of the ended lease",
        );
      }
    }
    return result;
  }

  async #deprovisionOn(backend: string, leaseUuid: string, signal: AbortSignal): Promise<boolean> {
    const log = this.#deps.logger.child({ lease_uuid: leaseUuid, backend });
    const client = this.#deps.clients.get(backend);
    if (client === undefined) {
      log.warn("owning backend is not configured; cannot deprovision");
      return false;
    }
    const notConfirmed = new Error("deprovision not confirmed");
    try {
      return await retry(
        async (attempt) => {
          const outcome = await client.deprovision(leaseUuid, signal);
          if (outcome.kind === "accepted") {
            log.info("deprovision accepted");
            return true;
          }
          if (outcome.kind === "not-sent" && outcome.reason === "fenced") {
            log.warn("owning backend is fenced; deprovision deferred");
            return false;
          }
          log.warn({ outcome: outcome.kind, attempt }, "deprovision not confirmed");
          throw notConfirmed;
        },
        {
          clock: this.#deps.clock,
          attempts: this.#retry.attempts,
          backoff: { initialMs: this.#retry.initialDelayMs, maxMs: this.#retry.maxDelayMs },
          signal,
          retryable: (err) => err === notConfirmed,
        },
      );
    } catch (err) {
      // Out of tries: left to the next recovery pass. A shutdown (ERR_ABORTED) propagates.
      if (err === notConfirmed) return false;
      throw err;
    }
  }
}
