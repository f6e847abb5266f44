import type pg from "pg";
import type { Clock } from "../core/clock.ts";
import { FredError } from "../core/errors.ts";
import type { Logger } from "../log.ts";
import { describePgError } from "./open.ts";

export interface PgListenerOptions {
  pool: pg.Pool;
  /** A PostgreSQL identifier (lower case and underscores): it is written into LISTEN. */
  channel: string;
  /** Each notification's payload. */
  heard: (payload: string) => void;
  /** Each time it (re)starts listening: what was notified while it did not listen was missed. */
  listening?: () => void;
  /** After a failure, the next try this much later (default 1 s). */
  retryMs?: number;
  clock: Clock;
  logger: Logger;
}

/**
 * One connection of `pool` that LISTENs on a channel while started, taken again after it
 * fails. A notification is lost while nobody listens, so whoever relies on them also looks
 * now and then, and when `listening` says it listens again.
 */
export class PgListener {
  readonly #o: PgListenerOptions;
  #stopped = true;
  /** The connection that listens, and how to let it go once it failed. */
  #held: { client: pg.PoolClient; drop: (err: Error) => void } | undefined;
  #cancelRetry: (() => void) | undefined;

  constructor(o: PgListenerOptions) {
    if (!/^[a-z_]+$/.test(o.channel))
      throw new FredError("ERR_INVALID_ARGUMENT", `bad channel name ${o.channel}`);
    this.#o = o;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    void this.#listen();
  }

  /** Stops listening; the connection goes back to the pool (closed if UNLISTEN failed). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancelRetry?.();
    const held = this.#held;
    this.#held = undefined;
    if (held === undefined) return;
    held.client.off("error", held.drop).removeAllListeners("notification");
    const failed = await held.client.query(`UNLISTEN ${this.#o.channel}`).then(
      () => undefined,
      (err: Error) => err,
    );
    held.client.release(failed);
  }

  async #listen(): Promise<void> {
    const o = this.#o;
    const retry = (err: unknown) => {
      o.logger.warn({ err: describePgError(err), channel: o.channel }, "listening for notifications failed");
      if (!this.#stopped) this.#cancelRetry = o.clock.setTimer(o.retryMs ?? 1_000, () => void this.#listen());
    };
    let client: pg.PoolClient;
    try {
      client = await o.pool.connect();
    } catch (err) {
      return retry(err);
    }
    let dropped = false;
    const drop = (err: Error) => {
      if (dropped) return;
      dropped = true;
      if (this.#held?.client === client) this.#held = undefined;
      client.release(err);
      retry(err);
    };
    client.on("notification", (n) => {
      if (n.channel === o.channel && !dropped) o.heard(n.payload ?? "");
    });
    client.on("error", drop);
    try {
      await client.query(`LISTEN ${o.channel}`);
    } catch (err) {
      return drop(err as Error);
    }
    if (dropped) return;
    if (this.#stopped) {
      client.off("error", drop).removeAllListeners("notification");
      client.release(true); // it listens: closed, not pooled
      return;
    }
    this.#held = { client, drop };
    o.listening?.();
  }
}
