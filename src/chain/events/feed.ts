// Over 500 lines: the websocket feed's connection, resubscribe, gap fill and fan-out are one state machine.
/**
 * The chain event feed: CometBFT websockets with fixed subscriptions, typed lease events
 * fanned out to consumers. It must never go silent: a client ping every `pingIntervalMs`
 * with a read deadline of twice that, and a block-height heartbeat — when no new block
 * arrives within `stallTimeoutMs` (15 s by default) the socket is treated as dead
 * even if it is still open. Reconnects back off exponentially with ±25 % jitter, and each
 * reconnect tells every consumer to `resync` (sweep the chain for edges it may have missed).
 * Every timer goes through the injected Clock. Typed events (`FeedEvents`) let callers wait
 * for a state (`whenState("live")`) instead of polling it.
 *
 * Subscriptions (ids are fixed so pushes can be routed by id):
 *   1 Tx lease_created for our provider      3 Tx lease_closed for our provider
 *   2 Tx lease_auto_closed credit_exhausted   4 NewBlockEvents (EndBlock lease_expired + heartbeat)
 *   5 NewBlockHeader, only if the node refuses 4; block_results of each height then fills in.
 *   6 Tx lease_cancelled for our provider
 * CometBFT allows 5 subscriptions per client (max_subscriptions_per_client), so with
 * `customDomains` a second socket (the "domains" channel) carries
 *   7 Tx lease_custom_domain_set for our provider   9 NewBlockHeader (its own heartbeat)
 *   8 Tx lease_custom_domain_cleared for our provider
 * Both channels share this code: each has its own socket, backoff and heartbeat; the feed is
 * `live` while every channel is, and a reconnect of either one resyncs every consumer.
 */
import { EventEmitter } from "node:events";
import WebSocket from "ws";
import { Backoff, sleepOrAbort } from "../../core/async/index.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import type { Logger } from "../../log.ts";
import { FanOut, type FeedConsumer } from "./fanout.ts";
import { AUTO_CLOSE_REASON, classifyFrame, parseAbciEvents, parseTxEventMap } from "./parse.ts";
import type { LeaseEvent, LeaseEventKind, ParseResult } from "./types.ts";

export interface EventFeedOptions {
  /** CometBFT websocket URL, e.g. ws://127.0.0.1:26657/websocket. */
  url: string;
  providerUuid: string;
  clock?: Clock;
  /** Uniform [0,1) source for backoff jitter. */
  random?: () => number;
  pingIntervalMs?: number;
  reconnectInitialMs?: number;
  reconnectMaxMs?: number;
  /** No new block for this long means the socket is dead even if open (default 15 s; Manifest's blocks come every ~6 s). */
  stallTimeoutMs?: number;
  /** Fetches `block_results.finalize_block_events` of a height (fallback and gap filling). */
  fetchBlockEvents?: (height: number, signal: AbortSignal) => Promise<unknown>;
  /** Heights to back-fill after a reconnect (bounded; older gaps are left to resync). */
  maxGapFill?: number;
  maxFrameBytes?: number;
  logger?: Logger;
  /** Also watch custom-domain set/clear events, on a second socket (default false). */
  customDomains?: boolean;
}

export type FeedState = "idle" | "connecting" | "live" | "backoff" | "stopped";

/** What the feed emits (all synchronously, from its own callbacks). */
export interface FeedEvents {
  /** Every state change. */
  state: [state: FeedState];
  /** Subscribed on a fresh connection (also a `state` change to "live"). */
  live: [info: { reconnect: boolean }];
  /** A connection ended (why, in words). */
  disconnected: [reason: string];
  /** Waiting this long before the next connection attempt. */
  backoff: [delayMs: number];
  /** A new highest block height. */
  block: [height: number];
  /** Each lease event as it is published (before any consumer reads it). */
  lease: [event: LeaseEvent];
}

export interface FeedMetrics {
  state: FeedState;
  lastHeight: number;
  lastBlockAtMs: number;
  lastEventAtMs: number;
  connects: number;
  reconnects: number;
  heartbeatTimeouts: number;
  readTimeouts: number;
  framesReceived: number;
  malformed: number;
  eventsPublished: number;
  dropped: number;
}

const SUB_CREATED = 1;
const SUB_AUTO_CLOSED = 2;
const SUB_CLOSED = 3;
const SUB_BLOCK_EVENTS = 4;
const SUB_HEADER = 5;
// The fifth live subscription (NewBlockHeader replaces a refused NewBlockEvents):
// CometBFT's default max_subscriptions_per_client is 5, so there is no room for a sixth.
const SUB_CANCELLED = 6;
const SUB_DOMAIN_SET = 7;
const SUB_DOMAIN_CLEARED = 8;
const SUB_DOMAIN_HEADER = 9;

const TX_KINDS: Record<number, readonly LeaseEventKind[]> = {
  [SUB_CREATED]: ["lease_created"],
  [SUB_AUTO_CLOSED]: ["lease_auto_closed"],
  [SUB_CLOSED]: ["lease_closed"],
  [SUB_CANCELLED]: ["lease_cancelled"],
  [SUB_DOMAIN_SET]: ["lease_custom_domain_set"],
  [SUB_DOMAIN_CLEARED]: ["lease_custom_domain_cleared"],
};
const BLOCK_KINDS: readonly LeaseEventKind[] = ["lease_expired"];

export function subscriptionQueries(providerUuid: string): Map<number, string> {
  if (!isCanonicalUuid(providerUuid))
    throw new FredError("ERR_CONFIG", "provider_uuid must be a canonical lowercase UUID");
  return new Map([
    [SUB_CREATED, `tm.event='Tx' AND lease_created.provider_uuid='${providerUuid}'`],
    [SUB_AUTO_CLOSED, `tm.event='Tx' AND lease_auto_closed.reason='${AUTO_CLOSE_REASON}'`],
    [SUB_CLOSED, `tm.event='Tx' AND lease_closed.provider_uuid='${providerUuid}'`],
    [SUB_BLOCK_EVENTS, "tm.event='NewBlockEvents'"],
    [SUB_CANCELLED, `tm.event='Tx' AND lease_cancelled.provider_uuid='${providerUuid}'`],
  ]);
}

/** The domains channel's queries (`provider_uuid` on these events is the newer line's, ledger §7.3). */
export function domainSubscriptionQueries(providerUuid: string): Map<number, string> {
  if (!isCanonicalUuid(providerUuid))
    throw new FredError("ERR_CONFIG", "provider_uuid must be a canonical lowercase UUID");
  return new Map([
    [SUB_DOMAIN_SET, `tm.event='Tx' AND lease_custom_domain_set.provider_uuid='${providerUuid}'`],
    [SUB_DOMAIN_CLEARED, `tm.event='Tx' AND lease_custom_domain_cleared.provider_uuid='${providerUuid}'`],
    [SUB_DOMAIN_HEADER, "tm.event='NewBlockHeader'"],
  ]);
}

/** One socket's subscriptions and connection state. Only the "leases" channel tracks heights. */
interface Channel {
  name: "leases" | "domains";
  queries: Map<number, string>;
  state: FeedState;
  socket: WebSocket | undefined;
  everLive: boolean;
  /** Highest height seen on the current connection (the heartbeat counts per connection). */
  connectionHeight: number;
}

function channel(name: Channel["name"], queries: Map<number, string>): Channel {
  return { name, queries, state: "idle", socket: undefined, everLive: false, connectionHeight: 0 };
}

/** The reconnect delays: doubling from `initialMs` to `maxMs`, each ±25 % at random. */
export function reconnectBackoff(initialMs: number, maxMs: number, random: () => number): Backoff {
  return new Backoff({ initialMs, maxMs, factor: 2, jitter: 0.25 }, random);
}

export class EventFeed extends EventEmitter<FeedEvents> {
  readonly fanout = new FanOut();
  readonly #options: Required<Omit<EventFeedOptions, "fetchBlockEvents" | "logger">> &
    Pick<EventFeedOptions, "fetchBlockEvents" | "logger">;
  readonly #channels: Channel[];
  #abort = new AbortController();
  #loops: Promise<void>[] | undefined;
  #headerFallback = false;
  #lastBlockEventsHeight = 0;
  readonly #metrics: FeedMetrics = {
    state: "idle",
    lastHeight: 0,
    lastBlockAtMs: 0,
    lastEventAtMs: 0,
    connects: 0,
    reconnects: 0,
    heartbeatTimeouts: 0,
    readTimeouts: 0,
    framesReceived: 0,
    malformed: 0,
    eventsPublished: 0,
    dropped: 0,
  };

  constructor(opts: EventFeedOptions) {
    super();
    this.#channels = [channel("leases", subscriptionQueries(opts.providerUuid))];
    if (opts.customDomains === true)
      this.#channels.push(channel("domains", domainSubscriptionQueries(opts.providerUuid)));
    this.#options = {
      clock: systemClock,
      random: Math.random,
      pingIntervalMs: 30_000,
      reconnectInitialMs: 1_000,
      reconnectMaxMs: 60_000,
      stallTimeoutMs: 15_000,
      maxGapFill: 100,
      maxFrameBytes: 32 * 1024 * 1024,
      customDomains: false,
      ...opts,
    };
    if (
      this.#options.reconnectInitialMs <= 0 ||
      this.#options.reconnectMaxMs < this.#options.reconnectInitialMs
    )
      throw new FredError("ERR_CONFIG", "websocket reconnect delays must satisfy 0 < initial ≤ max");
  }

  get heartbeatTimeoutMs(): number {
    return this.#options.stallTimeoutMs;
  }

  subscribe(name: string, capacity?: number): FeedConsumer {
    return this.fanout.subscribe(name, capacity);
  }

  metrics(): FeedMetrics {
    return { ...this.#metrics, dropped: this.fanout.droppedTotal };
  }

  get state(): FeedState {
    return this.#metrics.state;
  }

  /** Whether new blocks are being reported now (the tenant API's lease cache follows them then). */
  live(): boolean {
    return this.#metrics.state === "live";
  }

  /** Calls `listener` on every new block; returns the unsubscribe. */
  onBlock(listener: () => void): () => void {
    this.on("block", listener);
    return () => this.off("block", listener);
  }

  /** Calls `listener` with the lease of every event the feed publishes; returns the unsubscribe. */
  onLeaseEvent(listener: (leaseUuid: string) => void): () => void {
    const heard = (event: LeaseEvent) => listener(event.leaseUuid);
    this.on("lease", heard);
    return () => this.off("lease", heard);
  }

  /** Calls `listener` on every change of state (into or out of `live`); returns the unsubscribe. */
  onStateChange(listener: () => void): () => void {
    this.on("state", listener);
    return () => this.off("state", listener);
  }

  /** The feed's state: `live` while every channel is, else the first channel that is not. */
  #setChannelState(ch: Channel, state: FeedState): void {
    ch.state = state;
    const down = this.#channels.find((c) => c.state !== "live");
    this.#setState(down === undefined ? "live" : down.state);
  }

  #setState(state: FeedState): void {
    if (this.#metrics.state === state) return;
    this.#metrics.state = state;
    this.emit("state", state);
  }

  /**
   * Resolves once the feed is in `state` (at once when it already is). Rejects when the
   * feed stops first (ERR_SHUTTING_DOWN) or `signal` aborts (ERR_ABORTED).
   */
  whenState(state: FeedState, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = (err?: FredError) => {
        this.off("state", onState);
        signal?.removeEventListener("abort", onAbort);
        if (err === undefined) resolve();
        else reject(err);
      };
      const onState = (s: FeedState) => {
        if (s === state) done();
        else if (s === "stopped")
          done(new FredError("ERR_SHUTTING_DOWN", `event feed stopped before ${state}`));
      };
      const onAbort = () =>
        done(new FredError("ERR_ABORTED", `interrupted while waiting for the feed: ${state}`));
      if (this.#metrics.state === state) return resolve();
      if (signal?.aborted) return onAbort();
      this.on("state", onState);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (this.#metrics.state === "stopped") onState("stopped");
    });
  }

  start(): void {
    if (this.#loops !== undefined) return;
    this.#loops = this.#channels.map((ch) => this.#run(ch));
  }

  /** Stops the feed and closes every consumer; idempotent. */
  async stop(): Promise<void> {
    this.#abort.abort(new FredError("ERR_ABORTED", "event feed stopped"));
    for (const ch of this.#channels) ch.socket?.terminate();
    await Promise.all(this.#loops ?? []);
    this.#setState("stopped");
    this.fanout.closeAll();
  }

  /** Drops the current connection as if the network failed (operators and tests). */
  dropConnection(): void {
    for (const ch of this.#channels) ch.socket?.terminate();
  }

  async #run(ch: Channel): Promise<void> {
    const signal = this.#abort.signal;
    const backoff = reconnectBackoff(
      this.#options.reconnectInitialMs,
      this.#options.reconnectMaxMs,
      this.#options.random,
    );
    while (!signal.aborted) {
      this.#setChannelState(ch, "connecting");
      const wasLive = await this.#connectOnce(ch, signal);
      if (signal.aborted) break;
      // A connection that went live proves the node was reachable: start the delays over.
      if (wasLive) backoff.reset();
      const delay = backoff.next();
      this.#setChannelState(ch, "backoff");
      this.emit("backoff", delay);
      try {
        await sleepOrAbort(this.#options.clock, delay, signal);
      } catch {
        break;
      }
    }
  }

  /** One socket's life; resolves when it is gone. Returns whether it ever went live. */
  #connectOnce(ch: Channel, signal: AbortSignal): Promise<boolean> {
    const { clock, pingIntervalMs } = this.#options;
    return new Promise((resolve) => {
      let live = false;
      let lastActivity = clock.now();
      let finished = false;
      const cancels: Array<() => void> = [];
      let cancelHeartbeat: () => void = () => {};
      const ws = new WebSocket(this.#options.url, {
        maxPayload: this.#options.maxFrameBytes,
        perMessageDeflate: false,
      });
      ch.socket = ws;
      const finish = (why: string) => {
        if (finished) return;
        finished = true;
        for (const c of cancels) c();
        cancelHeartbeat();
        ws.removeAllListeners();
        ws.on("error", () => {});
        ws.terminate();
        if (ch.socket === ws) ch.socket = undefined;
        this.#options.logger?.warn(
          { channel: ch.name, reason: why, height: this.#metrics.lastHeight },
          "chain event feed disconnected",
        );
        this.emit("disconnected", why);
        resolve(live);
      };
      const armHeartbeat = () => {
        cancelHeartbeat();
        cancelHeartbeat = clock.setTimer(this.heartbeatTimeoutMs, () => {
          this.#metrics.heartbeatTimeouts++;
          finish("no new block within the heartbeat window");
        });
      };
      const schedulePing = () => {
        cancels.push(
          clock.setTimer(pingIntervalMs, () => {
            if (finished) return;
            if (clock.now() - lastActivity >= 2 * pingIntervalMs) {
              this.#metrics.readTimeouts++;
              finish("read deadline exceeded");
              return;
            }
            try {
              ws.ping();
            } catch {
              // The close handler reports the failure.
            }
            schedulePing();
          }),
        );
      };
      const onAbort = () => finish("stopped");
      signal.addEventListener("abort", onAbort, { once: true });
      cancels.push(() => signal.removeEventListener("abort", onAbort));
      // Until the socket opens, the heartbeat window doubles as the connect deadline.
      armHeartbeat();

      ws.on("open", () => {
        live = true;
        if (ch.name === "leases") this.#headerFallback = false;
        ch.connectionHeight = 0;
        for (const [id, query] of ch.queries) {
          ws.send(JSON.stringify({ jsonrpc: "2.0", method: "subscribe", id, params: { query } }));
        }
        this.#metrics.connects++;
        const reconnect = ch.everLive;
        ch.everLive = true;
        const was = this.#metrics.state;
        this.#setChannelState(ch, "live");
        if (was !== "live" && this.#metrics.state === "live") this.emit("live", { reconnect });
        armHeartbeat();
        schedulePing();
        if (reconnect) {
          this.#metrics.reconnects++;
          this.fanout.resyncAll("reconnect");
        }
        this.#options.logger?.info(
          { channel: ch.name, url: this.#options.url, reconnect },
          "chain event feed connected",
        );
      });
      ws.on("pong", () => {
        lastActivity = clock.now();
      });
      ws.on("message", (data, isBinary) => {
        lastActivity = clock.now();
        this.#metrics.framesReceived++;
        if (isBinary) {
          this.#metrics.malformed++;
          return;
        }
        const text = Array.isArray(data) ? Buffer.concat(data).toString("utf8") : data.toString();
        if (this.#handleFrame(ch, text, ws, signal)) armHeartbeat();
      });
      ws.on("error", (err) => finish(`socket error: ${err.message}`));
      ws.on("close", (code) => finish(`socket closed (${code})`));
    });
  }

  /** Handles one frame; returns true when it proved a new block exists. */
  #handleFrame(ch: Channel, text: string, ws: WebSocket, signal: AbortSignal): boolean {
    const frame = classifyFrame(text);
    switch (frame.type) {
      case "malformed":
        this.#metrics.malformed++;
        this.#options.logger?.debug({ reason: frame.reason }, "chain event feed skipped a frame");
        return false;
      case "ack":
        return false;
      case "rpc_error":
        if (frame.id === SUB_BLOCK_EVENTS && !this.#headerFallback) {
          // The node does not publish NewBlockEvents: watch headers, read block_results.
          this.#headerFallback = true;
          this.#options.logger?.warn(
            { error: frame.message },
            "NewBlockEvents refused; using block_results per height",
          );
          ws.send(
            JSON.stringify({
              jsonrpc: "2.0",
              method: "subscribe",
              id: SUB_HEADER,
              params: { query: "tm.event='NewBlockHeader'" },
            }),
          );
        } else {
          this.#options.logger?.warn(
            { id: frame.id, error: frame.message },
            "chain event feed subscription error",
          );
        }
        return false;
      case "tx": {
        // A push is trusted only for an id this socket subscribed to.
        const kinds =
          typeof frame.id === "number" && ch.queries.has(frame.id) ? TX_KINDS[frame.id] : undefined;
        if (kinds === undefined) return false;
        this.#publish(
          parseTxEventMap(frame.eventMap, kinds, this.#options.providerUuid, frame.height, frame.txHash),
        );
        if (ch.name === "leases") this.#seeHeight(frame.height, signal);
        return freshForConnection(ch, frame.height);
      }
      case "block": {
        const fallback = ch.name === "leases" && this.#headerFallback && frame.id === SUB_HEADER;
        if (typeof frame.id !== "number" || (!ch.queries.has(frame.id) && !fallback)) return false;
        // The domains channel's headers only prove that socket alive; heights and gaps are the leases channel's.
        if (ch.name === "domains") return freshForConnection(ch, frame.height);
        this.#seeHeight(frame.height, signal);
        const isNew = freshForConnection(ch, frame.height);
        if (frame.id === SUB_BLOCK_EVENTS) this.#blockEvents(frame.height, frame.events);
        else if (frame.id === SUB_HEADER && this.#headerFallback) this.#fetchBlock(frame.height, signal);
        return isNew;
      }
    }
  }

  #blockEvents(height: number, events: unknown): void {
    if (height <= this.#lastBlockEventsHeight) return;
    this.#lastBlockEventsHeight = height;
    this.#publish(parseAbciEvents(events, BLOCK_KINDS, this.#options.providerUuid, height, undefined));
  }

  #fetchBlock(height: number, signal: AbortSignal): void {
    const fetch = this.#options.fetchBlockEvents;
    if (fetch === undefined) return;
    fetch(height, signal).then(
      (events) => this.#blockEvents(height, events),
      (err: unknown) =>
        this.#options.logger?.warn({ height, err }, "block_results fetch failed; resync covers it"),
    );
  }

  /** Records a height; a jump after a reconnect back-fills EndBlock events of skipped heights. */
  #seeHeight(height: number, signal: AbortSignal): boolean {
    if (height <= this.#metrics.lastHeight) return false;
    const previous = this.#metrics.lastHeight;
    this.#metrics.lastHeight = height;
    this.#metrics.lastBlockAtMs = this.#options.clock.now();
    this.emit("block", height);
    if (previous > 0 && this.#lastBlockEventsHeight > 0 && this.#options.fetchBlockEvents !== undefined) {
      const from = Math.max(this.#lastBlockEventsHeight + 1, height - this.#options.maxGapFill);
      // Heights strictly between what we processed and the new tip, fetched in order.
      if (from < height)
        this.#fillGap(from, height - 1, signal).catch((err: unknown) =>
          signal.aborted
            ? undefined
            : this.#options.logger?.warn({ err, from, to: height - 1 }, "gap fill failed; resync covers it"),
        );
    }
    return true;
  }

  /** Back-fills a fixed range of heights never processed (computed before the new tip is). */
  async #fillGap(from: number, to: number, signal: AbortSignal): Promise<void> {
    const fetch = this.#options.fetchBlockEvents;
    if (fetch === undefined) return;
    // The first failure ends the fill (the caller logs it); the resync of the reconnect covers the rest.
    for (let h = from; h <= to && !signal.aborted; h++) {
      const events = await fetch(h, signal);
      this.#publish(parseAbciEvents(events, BLOCK_KINDS, this.#options.providerUuid, h, undefined));
    }
  }

  #publish(result: ParseResult): void {
    this.#metrics.malformed += result.malformed;
    for (const event of result.events) {
      this.#metrics.eventsPublished++;
      this.#metrics.lastEventAtMs = this.#options.clock.now();
      this.emit("lease", event);
      this.fanout.publish(event);
    }
  }
}

/**
 * The heartbeat counts blocks per connection: a node restarted from a slightly older
 * height (lost blocks after a crash) still proves it is alive by producing blocks.
 */
function freshForConnection(ch: Channel, height: number): boolean {
  if (height <= ch.connectionHeight) return false;
  ch.connectionHeight = height;
  return true;
}
