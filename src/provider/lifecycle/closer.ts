import { FredError } from "../../core/errors.ts";
import type { LifecycleDeps } from "./deps.ts";

/**
 * `lease_closed` / `lease_expired`: deprovision wherever the lease may be — its
 * confirmed owner, the backend of an unresolved attempt, every candidate of a conflict.
 * Each backend gets a bounded number of tries with doubling delays; a backend that
 * still does not confirm is left to the next recovery pass (the lease stays recorded).
 */
export interface CloseRetry {
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_CLOSE_RETRY: CloseRetry = { attempts: 5, initialDelayMs: 1_000, maxDelayMs: 30_000 };

export type CloseResult = { deprovisioned: string[]; failed: string[]; unknown: boolean };

export class Closer {
  readonly #d: LifecycleDeps;
  readonly #retry: CloseRetry;

  constructor(deps: LifecycleDeps, retry: CloseRetry = DEFAULT_CLOSE_RETRY) {
    this.#d = deps;
    this.#retry = retry;
  }

  /** Backends that may hold the lease, from durable records only. */
  targets(leaseUuid: string): string[] {
    const out = new Set<string>();
    const placement = this.#d.store.placement(leaseUuid);
    if (placement?.owner !== undefined) out.add(placement.owner);
    for (const c of placement?.candidates ?? []) out.add(c);
    const attempt = this.#d.store.attemptFor(leaseUuid);
    if (attempt !== undefined) out.add(attempt.backend);
    return [...out].sort();
  }

  async close(leaseUuid: string, signal: AbortSignal): Promise<CloseResult> {
    const targets = this.targets(leaseUuid);
    const result: CloseResult = { deprovisioned: [], failed: [], unknown: targets.length === 0 };
    for (const backend of targets) {
      const ok = await this.#deprovisionOn(backend, leaseUuid, signal);
      (ok ? result.deprovisioned : result.failed).push(backend);
    }
    return result;
  }

  async #deprovisionOn(backend: string, leaseUuid: string, signal: AbortSignal): Promise<boolean> {
    const log = this.#d.logger.child({ lease_uuid: leaseUuid, backend });
    const client = this.#d.clients.get(backend);
    if (client === undefined) {
      log.warn("owning backend is not configured; cannot deprovision");
      return false;
    }
    let delay = this.#retry.initialDelayMs;
    for (let attempt = 1; attempt <= this.#retry.attempts; attempt++) {
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
      if (attempt === this.#retry.attempts) break;
      try {
        await this.#d.clock.sleep(delay, signal);
      } catch {
        throw new FredError("ERR_ABORTED", "deprovision interrupted by shutdown");
      }
      delay = Math.min(delay * 2, this.#retry.maxDelayMs);
    }
    return false;
  }
}
