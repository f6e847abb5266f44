import type { Clock } from "../../core/clock.ts";

/**
 * The charts' memory: one sample every `stepMs` (a minute in production; tests shorten it
 * through the option, never a config key), at most `capacity` kept (1,440: 24 hours of
 * minutes), oldest dropped first. Lost at restart: the dashboard needs no Prometheus, and
 * an operator who wants history keeps scraping `/metrics`.
 */
export interface Sample {
  /** Unix seconds. */
  t: number;
  leasesActive: number;
  provisionsPerMinute: number;
  latencyP50: number | null;
  latencyP99: number | null;
  apiRequestsPerSecond: number;
  apiErrorsPerSecond: number;
  /** Withdrawn since start, by denom (base units). */
  earnings: Readonly<Record<string, number>>;
  /** Credit-depletion closes since start. */
  creditCloses: number;
}

export const RING_CAPACITY = 1_440;
export const DEFAULT_STEP_MS = 60_000;

export interface SampleRingOptions {
  clock: Clock;
  stepMs?: number;
  capacity?: number;
  /** Takes one sample (the step's figures); a failure skips the step. */
  take: (stepMs: number) => Promise<Omit<Sample, "t">>;
  onError?: (err: unknown) => void;
}

export class SampleRing {
  readonly stepMs: number;
  readonly capacity: number;
  readonly #o: SampleRingOptions;
  readonly #samples: Sample[] = [];
  #cancel: (() => void) | undefined;
  #stopped = false;

  constructor(o: SampleRingOptions) {
    this.#o = o;
    this.stepMs = o.stepMs ?? DEFAULT_STEP_MS;
    this.capacity = o.capacity ?? RING_CAPACITY;
  }

  /** Samples every step from now on (chained timers: a slow sample never overlaps the next). */
  start(): void {
    const tick = () => {
      void this.sampleNow().finally(() => {
        if (!this.#stopped) this.#cancel = this.#o.clock.setTimer(this.stepMs, tick);
      });
    };
    this.#cancel = this.#o.clock.setTimer(this.stepMs, tick);
  }

  stop(): void {
    this.#stopped = true;
    this.#cancel?.();
  }

  async sampleNow(): Promise<void> {
    try {
      const values = await this.#o.take(this.stepMs);
      this.#samples.push({ t: Math.floor(this.#o.clock.now() / 1000), ...values });
      while (this.#samples.length > this.capacity) this.#samples.shift();
    } catch (err) {
      this.#o.onError?.(err);
    }
  }

  /** Samples newer than `windowSeconds` ago, oldest first. */
  within(windowSeconds: number): readonly Sample[] {
    const since = this.#o.clock.now() / 1000 - windowSeconds;
    const i = this.#samples.findIndex((s) => s.t > since);
    return i < 0 ? [] : this.#samples.slice(i);
  }

  /** The newest sample at least `ageSeconds` old (or the oldest kept), for "in the last 24 h". */
  atOrBefore(ageSeconds: number): Sample | undefined {
    const before = this.#o.clock.now() / 1000 - ageSeconds;
    let found: Sample | undefined;
    for (const s of this.#samples) {
      if (s.t > before) break;
      found = s;
    }
    return found ?? this.#samples[0];
  }
}
