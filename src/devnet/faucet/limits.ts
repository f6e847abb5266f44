/**
 * The faucet's two bounds: an address waits `cooldownMs` before the same denom again, and
 * the whole faucet grants at most `creditsPerMinute` in any 60 seconds. A slot is taken
 * before the send starts (two concurrent requests for one address cannot both pass) and
 * given back when the send fails, so a refused tx does not cost the address its day.
 */
import type { Clock } from "../../core/clock.ts";

const MINUTE_MS = 60_000;

export type Refusal = { reason: "cooldown" | "rate"; retryAfterMs: number };

export class CreditLimits {
  readonly #cooldownMs: number;
  readonly #perMinute: number;
  readonly #clock: Clock;
  /** Key → when its credit was granted; insertion order is grant order (a retake re-inserts). */
  readonly #granted = new Map<string, number>();
  /** Grant times of the last minute, oldest first. */
  #recent: number[] = [];

  constructor(opts: { cooldownMs: number; creditsPerMinute: number; clock: Clock }) {
    this.#cooldownMs = opts.cooldownMs;
    this.#perMinute = opts.creditsPerMinute;
    this.#clock = opts.clock;
  }

  /** Takes a credit slot for `key`, or says which bound refuses it and for how long. */
  take(key: string): Refusal | undefined {
    const now = this.#clock.now();
    this.#forgetExpired(now);
    const at = this.#granted.get(key);
    if (at !== undefined) return { reason: "cooldown", retryAfterMs: at + this.#cooldownMs - now };
    if (this.#recent.length >= this.#perMinute) {
      return { reason: "rate", retryAfterMs: (this.#recent[0] as number) + MINUTE_MS - now };
    }
    this.#granted.set(key, now);
    this.#recent.push(now);
    return undefined;
  }

  /** A send that failed gives the address its slot back (the minute's count stays spent). */
  release(key: string): void {
    this.#granted.delete(key);
  }

  #forgetExpired(now: number): void {
    let drop = 0;
    while (drop < this.#recent.length && (this.#recent[drop] as number) + MINUTE_MS <= now) drop++;
    if (drop > 0) this.#recent = this.#recent.slice(drop);
    // Oldest first, so the sweep stops at the first entry still cooling down.
    for (const [key, at] of this.#granted) {
      if (at + this.#cooldownMs > now) break;
      this.#granted.delete(key);
    }
  }
}
