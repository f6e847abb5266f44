/**
 * Fan-out of feed items to independent consumers. Each consumer has its own bounded queue:
 * a full queue drops the new event (counted) and owes that consumer a `resync`, delivered
 * as soon as it has room, so a slow consumer loses events visibly and never blocks others.
 */
import type { FeedItem, LeaseEvent, ResyncReason } from "./types.ts";

export class FeedConsumer implements AsyncIterable<FeedItem> {
  readonly name: string;
  readonly capacity: number;
  #queue: FeedItem[] = [];
  #head = 0;
  #waiter: ((item: FeedItem | undefined) => void) | undefined;
  #owedResync = false;
  #closed = false;
  dropped = 0;
  delivered = 0;
  readonly #onClose: (c: FeedConsumer) => void;

  constructor(name: string, capacity: number, onClose: (c: FeedConsumer) => void) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError("consumer capacity must be ≥ 1");
    this.name = name;
    this.capacity = capacity;
    this.#onClose = onClose;
  }

  get queued(): number {
    return this.#queue.length - this.#head;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Offers one item; returns false (and counts a drop) when the queue is full. */
  offer(item: FeedItem): boolean {
    if (this.#closed) return false;
    if (this.#waiter !== undefined) {
      // A waiting reader means the queue is empty; an owed resync goes first.
      const w = this.#waiter;
      this.#waiter = undefined;
      if (this.#owedResync) {
        this.#owedResync = false;
        this.delivered++;
        w({ type: "resync", reason: "overflow" });
        return this.offer(item);
      }
      this.delivered++;
      w(item);
      return true;
    }
    const room = this.capacity - this.queued;
    const needed = this.#owedResync ? 2 : 1;
    if (room < needed) {
      if (item.type === "event") {
        this.dropped++;
        this.#owedResync = true;
        return false;
      }
      // A resync supersedes everything queued: the consumer will re-read the chain anyway.
      this.#owedResync = true;
      return true;
    }
    if (this.#owedResync) {
      this.#owedResync = false;
      this.#push({ type: "resync", reason: "overflow" });
    }
    this.#push(item);
    return true;
  }

  #push(item: FeedItem): void {
    this.#queue.push(item);
  }

  #shift(): FeedItem | undefined {
    if (this.#head >= this.#queue.length) {
      if (this.#owedResync) {
        this.#owedResync = false;
        return { type: "resync", reason: "overflow" };
      }
      return undefined;
    }
    const item = this.#queue[this.#head++] as FeedItem;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** The next item without waiting, or undefined when none is ready. */
  poll(): FeedItem | undefined {
    const item = this.#shift();
    if (item !== undefined) this.delivered++;
    return item;
  }

  /** Waits for the next item; resolves undefined once the consumer is closed. */
  next(signal?: AbortSignal): Promise<FeedItem | undefined> {
    const ready = this.poll();
    if (ready !== undefined || this.#closed) return Promise.resolve(ready);
    if (this.#waiter !== undefined) throw new Error(`consumer ${this.name} already has a pending reader`);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        this.#waiter = undefined;
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiter = (item) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(item);
      };
    });
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    this.#head = 0;
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.(undefined);
    this.#onClose(this);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<FeedItem> {
    for (;;) {
      const item = await this.next();
      if (item === undefined) return;
      yield item;
    }
  }
}

export class FanOut {
  readonly #consumers = new Set<FeedConsumer>();
  droppedTotal = 0;

  /** Adds a consumer with its own queue of `capacity` items (default 1000, as the reference). */
  subscribe(name: string, capacity = 1000): FeedConsumer {
    const c = new FeedConsumer(name, capacity, (gone) => this.#consumers.delete(gone));
    this.#consumers.add(c);
    return c;
  }

  publish(event: LeaseEvent): void {
    for (const c of this.#consumers) {
      if (!c.offer({ type: "event", event })) this.droppedTotal++;
    }
  }

  resyncAll(reason: ResyncReason): void {
    for (const c of this.#consumers) c.offer({ type: "resync", reason });
  }

  consumers(): readonly FeedConsumer[] {
    return [...this.#consumers];
  }

  closeAll(): void {
    for (const c of [...this.#consumers]) c.close();
  }
}
