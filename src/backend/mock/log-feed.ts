import type { InstanceChange, LogEvent, LogLineEvent } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";

/**
 * The mock's container logs, for the streaming log read: each instance keeps its last
 * `RING_LINES` lines; while somebody follows a lease, every instance writes a `tick n`
 * line each `intervalMs` (0: never), and tests write lines of their own through the
 * `/_mock/log` route. A restart or an update sends an instance event to the followers,
 * then the new "container" says it started; the workload's removal ends every follower.
 * A follower that falls `MAX_BEHIND` events behind loses the oldest (the mock produces
 * without waiting for readers; its memory stays bounded).
 */
export const RING_LINES = 1_000;
export const MAX_BEHIND = 10_000;

export interface MockInstance {
  service: string;
  index: number;
}

type Listener = (event: LogEvent | "end") => void;

interface LeaseFeed {
  rings: Map<string, LogLineEvent[]>;
  listeners: Set<Listener>;
  tick: number;
  cancelTicker: (() => void) | undefined;
}

const key = (service: string, index: number) => `${service}/${index}`;

export class MockLogFeed {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #instances: (leaseUuid: string) => readonly MockInstance[] | undefined;
  readonly #leases = new Map<string, LeaseFeed>();

  constructor(o: {
    clock: Clock;
    intervalMs: number;
    /** The lease's instances now; undefined when it has no workload. */
    instances: (leaseUuid: string) => readonly MockInstance[] | undefined;
  }) {
    this.#clock = o.clock;
    this.#intervalMs = o.intervalMs;
    this.#instances = o.instances;
  }

  /** Appends lines to an instance's log and sends them to the followers. */
  write(leaseUuid: string, lines: readonly Omit<LogLineEvent, "ts">[]): void {
    const feed = this.#feed(leaseUuid);
    if (feed === undefined) return;
    const ts = new Date(this.#clock.now()).toISOString();
    for (const l of lines) {
      const event: LogLineEvent = { ...l, ts };
      const ring = feed.rings.get(key(l.service, l.instance)) ?? [];
      ring.push(event);
      if (ring.length > RING_LINES) ring.shift();
      feed.rings.set(key(l.service, l.instance), ring);
      for (const listener of feed.listeners) listener(event);
    }
  }

  /** Every instance's container was replaced: followers hear it, then its first line. */
  changed(leaseUuid: string, event: InstanceChange): void {
    const feed = this.#feed(leaseUuid);
    const instances = this.#instances(leaseUuid);
    if (feed === undefined || instances === undefined) return;
    const ts = new Date(this.#clock.now()).toISOString();
    for (const i of instances) {
      for (const listener of feed.listeners)
        listener({ type: "instance", service: i.service, instance: i.index, event, ts });
    }
    this.#started(leaseUuid, instances);
  }

  /** The workload is gone: its followers end and its lines are forgotten. */
  ended(leaseUuid: string): void {
    const feed = this.#leases.get(leaseUuid);
    if (feed === undefined) return;
    this.#leases.delete(leaseUuid);
    feed.cancelTicker?.();
    for (const listener of feed.listeners) listener("end");
  }

  /** The last `tail` lines of each instance, then events as they happen, until the end or `signal`. */
  async *follow(leaseUuid: string, tail: number, signal: AbortSignal): AsyncGenerator<LogEvent> {
    const feed = this.#feed(leaseUuid);
    if (feed === undefined) return;
    const queue: (LogEvent | "end")[] = [];
    let wake: (() => void) | undefined;
    const listener: Listener = (event) => {
      if (queue.length >= MAX_BEHIND) queue.shift();
      queue.push(event);
      wake?.();
    };
    const onAbort = () => wake?.();
    // Taken in the same turn as the subscription: no line falls between the tail and the feed.
    const first = tail === 0 ? [] : [...feed.rings.values()].flatMap((ring) => ring.slice(-tail));
    feed.listeners.add(listener);
    signal.addEventListener("abort", onAbort, { once: true });
    if (feed.listeners.size === 1) this.#startTicker(leaseUuid, feed);
    try {
      yield* first;
      while (!signal.aborted) {
        const event = queue.shift();
        if (event === "end") return;
        if (event !== undefined) {
          yield event;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      feed.listeners.delete(listener);
      if (feed.listeners.size === 0) {
        feed.cancelTicker?.();
        feed.cancelTicker = undefined;
      }
    }
  }

  #feed(leaseUuid: string): LeaseFeed | undefined {
    let feed = this.#leases.get(leaseUuid);
    if (feed !== undefined) return feed;
    const instances = this.#instances(leaseUuid);
    if (instances === undefined) return undefined;
    feed = { rings: new Map(), listeners: new Set(), tick: 0, cancelTicker: undefined };
    this.#leases.set(leaseUuid, feed);
    this.#started(leaseUuid, instances);
    return feed;
  }

  #started(leaseUuid: string, instances: readonly MockInstance[]): void {
    this.write(
      leaseUuid,
      instances.map((i) => ({
        service: i.service,
        instance: i.index,
        stream: "stdout" as const,
        line: `mock ${i.service}/${i.index} started`,
      })),
    );
  }

  #startTicker(leaseUuid: string, feed: LeaseFeed): void {
    if (this.#intervalMs <= 0) return;
    const tick = () => {
      const instances = this.#instances(leaseUuid) ?? [];
      feed.tick++;
      this.write(
        leaseUuid,
        instances.map((i) => ({
          service: i.service,
          instance: i.index,
          stream: "stdout" as const,
          line: `tick ${feed.tick}`,
        })),
      );
      feed.cancelTicker = this.#clock.setTimer(this.#intervalMs, tick);
    };
    feed.cancelTicker = this.#clock.setTimer(this.#intervalMs, tick);
  }
}
