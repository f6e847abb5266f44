import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type pg from "pg";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { describePgError } from "../../pg/open.ts";
import type { TransactionRunner } from "../../pg/transaction.ts";

/**
 * Requests a standby cannot hand to the leader directly (its address refuses them, or does
 * not connect: a partition between instances, or a leader that just died) are journaled in
 * PostgreSQL instead, which every instance reaches (issue #36): the standby commits the
 * request to `fred_inbox` and waits; the leader's intake takes it, fenced by its
 * generation, serves it through its own HTTP routes (so every validation and answer is
 * exactly the one a direct request gets) and commits the answer, which the standby sends
 * back to its client. The leader hears of a journaled request by PostgreSQL's NOTIFY; the
 * standby looks for its answer every ANSWER_POLL_MS while it waits. Nothing is carried out twice: a request is taken once, under one
 * generation; a request whose leader stopped leading before answering is answered 503 by
 * the next leader, never served again (the old leader may have acted on it), as a forward
 * that loses its leader is (ha/forwarder.ts). A request no leader took within the hold is
 * withdrawn (only while still untaken) and answered 503: it never ran.
 */
export const INBOX_MIGRATION = `CREATE TABLE fred_inbox (
  id uuid PRIMARY KEY,
  provider_uuid uuid NOT NULL,
  received_by text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  method text NOT NULL,
  url text NOT NULL,
  headers jsonb NOT NULL,
  remote_address text NOT NULL,
  body bytea NOT NULL,
  taken_generation bigint,
  status integer,
  answer_headers jsonb,
  answer_body bytea
);
CREATE INDEX fred_inbox_open ON fred_inbox (provider_uuid, received_at) WHERE status IS NULL`;

/** How often a waiting standby looks for its answers (one query for all of them). */
const ANSWER_POLL_MS = 100;
/**
 * The leader hears of a journaled request at once (NOTIFY on this channel, the provider's
 * UUID as payload) and looks anyway this often, for one notified while it was not listening.
 */
const CHANNEL = "fred_inbox";
const INTAKE_POLL_MS = 5_000;
/** After the listening connection fails, the next try this much later. */
const RELISTEN_MS = 1_000;
/** Requests the leader serves at once from the inbox; more wait for the next look. */
const INTAKE_CONCURRENCY = 32;
/** Rows older than this are removed by the leader (answers nobody collected: their client left). */
const KEEP_ROWS_MS = 60 * 60_000;
const SWEEP_EVERY_MS = 60_000;
/** Hop-by-hop headers, never journaled (RFC 9110 §7.6.1); content-length is set from the body. */
const NOT_JOURNALED = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-authorization",
  "proxy-authenticate",
  "content-length",
]);

/** What a request taken by a leader that stopped leading before answering is answered. */
const OUTCOME_UNKNOWN = {
  status: 503,
  headers: { "content-type": "application/json", "retry-after": "2" },
  body: JSON.stringify({
    error:
      "the providerd instance that took this request stopped leading before answering; check before retrying",
    code: 503,
  }),
};

/** A request as a standby received it (headers as sent, the client's address), journaled for the leader. */
export interface RelayedRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[]>;
  remoteAddress: string;
  body: Buffer;
}

/** The leader's answer to a journaled request, as its routes gave it. */
export interface RelayedAnswer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: Buffer;
}

export interface InboxOptions {
  pool: pg.Pool;
  providerUuid: string;
  instance: string;
  clock: Clock;
  logger: Logger;
}

interface Waiter {
  /** Until then a leader may take it; past it, it is withdrawn if still untaken. */
  takeBy: number;
  /** Past it, a taken request whose answer has not come is given up (503). */
  answerBy: number;
  taken: boolean;
  done: (answer: RelayedAnswer | undefined) => void;
}

/**
 * A standby's side: journals a request and waits for the leader's answer. One poll, every
 * ANSWER_POLL_MS, reads the answers of every request waiting, and runs only while some do.
 */
export class InboxSender {
  readonly #o: InboxOptions & { maxBodyBytes: number; answerWaitMs: number };
  readonly #waiting = new Map<string, Waiter>();
  #polling = false;

  /** `maxBodyBytes`: max_request_body_size; `answerWaitMs`: how long a taken request may take (the listener's timeouts). */
  constructor(o: InboxOptions & { maxBodyBytes: number; answerWaitMs: number }) {
    this.#o = o;
  }

  /**
   * Journals `req` (its body read here) and resolves with the leader's answer, or
   * undefined when it was not carried out (untaken by `takeBy`, the database refused it)
   * or its outcome did not come in time.
   */
  async relay(req: IncomingMessage, takeBy: number): Promise<RelayedAnswer | undefined> {
    const o = this.#o;
    const body = await readUpTo(req, o.maxBodyBytes + 1);
    if (body === undefined) return undefined;
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined && !NOT_JOURNALED.has(name)) headers[name] = value;
    // A body over the limit is journaled cut one byte past it: the leader's route then
    // refuses it as it refuses the whole one (400 or 413, whichever that route answers).
    headers["content-length"] = String(body.length);
    const id = randomUUID();
    try {
      await o.pool.query(
        `WITH journaled AS (
           INSERT INTO fred_inbox (id, provider_uuid, received_by, method, url, headers, remote_address, body)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING provider_uuid)
         SELECT pg_notify('${CHANNEL}', provider_uuid::text) FROM journaled`,
        [
          id,
          o.providerUuid,
          o.instance,
          req.method ?? "GET",
          req.url ?? "/",
          JSON.stringify(headers),
          req.socket.remoteAddress ?? "",
          body,
        ],
      );
    } catch (err) {
      o.logger.warn({ err: describePgError(err) }, "standby: could not journal a request for the leader");
      return undefined;
    }
    return new Promise((resolve) => {
      this.#waiting.set(id, {
        takeBy,
        answerBy: Math.max(takeBy, o.clock.now()) + o.answerWaitMs,
        taken: false,
        done: resolve,
      });
      if (!this.#polling) {
        this.#polling = true;
        o.clock.setTimer(ANSWER_POLL_MS, this.#poll);
      }
    });
  }

  #poll = (): void => {
    void this.#look().finally(() => {
      if (this.#waiting.size > 0) this.#o.clock.setTimer(ANSWER_POLL_MS, this.#poll);
      else this.#polling = false;
    });
  };

  async #look(): Promise<void> {
    const o = this.#o;
    type Row = {
      id: string;
      taken: boolean;
      status: number | null;
      answer_headers: RelayedAnswer["headers"] | null;
      answer_body: Buffer | null;
    };
    let rows: Row[];
    try {
      rows = (
        await o.pool.query<Row>(
          `SELECT id, taken_generation IS NOT NULL AS taken, status, answer_headers, answer_body
           FROM fred_inbox WHERE id = ANY($1::uuid[])`,
          [[...this.#waiting.keys()]],
        )
      ).rows;
    } catch (err) {
      o.logger.debug({ err: describePgError(err) }, "standby: reading the inbox failed");
      // Unknown this time: nothing is settled but what the deadlines settle.
      for (const [id, w] of this.#waiting) if (o.clock.now() >= w.answerBy) this.#settle(id, undefined);
      return;
    }
    const seen = new Map(rows.map((r) => [r.id, r]));
    const now = o.clock.now();
    for (const [id, w] of this.#waiting) {
      const row = seen.get(id);
      if (row?.status != null) {
        this.#settle(id, {
          status: row.status,
          headers: row.answer_headers ?? {},
          body: row.answer_body ?? Buffer.alloc(0),
        });
        void o.pool.query("DELETE FROM fred_inbox WHERE id = $1", [id]).catch(() => {});
        continue;
      }
      if (row === undefined) this.#settle(id, undefined);
      else if (row.taken) w.taken = true;
      if (!w.taken && now >= w.takeBy) await this.#withdraw(id, w);
      else if (now >= w.answerBy) this.#settle(id, undefined);
    }
  }

  /** Removes a request no leader took in time, unless one takes it meanwhile. */
  async #withdraw(id: string, w: Waiter): Promise<void> {
    try {
      const gone = await this.#o.pool.query(
        "DELETE FROM fred_inbox WHERE id = $1 AND taken_generation IS NULL",
        [id],
      );
      if (gone.rowCount === 1) this.#settle(id, undefined);
      else w.taken = true;
    } catch (err) {
      this.#o.logger.debug({ err: describePgError(err) }, "standby: withdrawing a request failed");
      if (this.#o.clock.now() >= w.answerBy) this.#settle(id, undefined);
    }
  }

  #settle(id: string, answer: RelayedAnswer | undefined): void {
    const w = this.#waiting.get(id);
    if (w === undefined) return;
    this.#waiting.delete(id);
    w.done(answer);
  }
}

/**
 * The leader's side: takes journaled requests, fenced by its generation, serves each
 * through its own routes (`serve`) and commits the answer. Started once its daemon serves,
 * stopped before the daemon stops.
 */
export class InboxIntake {
  readonly #o: InboxOptions & {
    fence: TransactionRunner;
    serve: (r: RelayedRequest) => Promise<RelayedAnswer>;
  };
  #stop: (() => void) | undefined;
  #stopped = false;
  readonly #serving = new Set<Promise<void>>();
  #lastSweep = 0;
  /** The connection that LISTENs, and how to let it go on failure; undefined while (re)connecting. */
  #listener: { client: pg.PoolClient; drop: (err: Error) => void } | undefined;
  /** A look under way, and whether another was asked for meanwhile (looks never overlap). */
  #looking: Promise<void> | undefined;
  #again = false;

  constructor(
    o: InboxOptions & { fence: TransactionRunner; serve: (r: RelayedRequest) => Promise<RelayedAnswer> },
  ) {
    this.#o = o;
  }

  start(): void {
    this.#lastSweep = this.#o.clock.now();
    void this.#listen();
    const tick = () => {
      this.#kick();
      if (!this.#stopped) this.#stop = this.#o.clock.setTimer(INTAKE_POLL_MS, tick);
    };
    tick();
  }

  /** Stops taking; resolves once the requests being served are answered. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stop?.();
    const listener = this.#listener;
    this.#listener = undefined;
    if (listener !== undefined) {
      listener.client.off("error", listener.drop).removeAllListeners("notification");
      const failed = await listener.client.query(`UNLISTEN ${CHANNEL}`).then(
        () => undefined,
        (err: Error) => err,
      );
      // A connection that may still listen is closed, not pooled.
      listener.client.release(failed);
    }
    await this.#looking;
    await Promise.all(this.#serving);
  }

  /** Holds one connection that LISTENs for journaled requests; reconnects after a failure. */
  async #listen(): Promise<void> {
    const o = this.#o;
    const retry = (err: unknown, why: string) => {
      o.logger.warn({ err: describePgError(err) }, why);
      if (!this.#stopped) o.clock.setTimer(RELISTEN_MS, () => void this.#listen());
    };
    let client: pg.PoolClient;
    try {
      client = await o.pool.connect();
    } catch (err) {
      return retry(err, "leader: could not listen for journaled requests");
    }
    let dropped = false;
    const drop = (err: Error) => {
      if (dropped) return;
      dropped = true;
      if (this.#listener?.client === client) this.#listener = undefined;
      client.release(err);
      retry(err, "leader: the inbox's listening connection failed");
    };
    client.on("notification", (n) => {
      if (n.payload === o.providerUuid && !dropped) this.#kick();
    });
    client.on("error", drop);
    try {
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      return drop(err as Error);
    }
    if (this.#stopped || dropped) {
      if (!dropped) client.release(true); // it listens: closed, not pooled
      return;
    }
    this.#listener = { client, drop };
    // Journaled while nobody listened: looked at now.
    this.#kick();
  }

  /** A look now, or right after the one under way. */
  #kick(): void {
    if (this.#stopped) return;
    if (this.#looking !== undefined) {
      this.#again = true;
      return;
    }
    this.#looking = this.takeNow().finally(() => {
      this.#looking = undefined;
      if (this.#again) {
        this.#again = false;
        this.#kick();
      }
    });
  }

  /** One look at the inbox (notifications and a slow timer ask for it; tests call it). */
  async takeNow(): Promise<void> {
    const o = this.#o;
    try {
      if (o.clock.now() - this.#lastSweep >= SWEEP_EVERY_MS) {
        this.#lastSweep = o.clock.now();
        await o.pool.query(
          "DELETE FROM fred_inbox WHERE provider_uuid = $1 AND received_at < clock_timestamp() - $2 * interval '1 millisecond'",
          [o.providerUuid, KEEP_ROWS_MS],
        );
      }
      // Nearly always nothing is waiting: one indexed query, outside any fenced transaction.
      const open = await o.pool.query(
        "SELECT 1 FROM fred_inbox WHERE provider_uuid = $1 AND status IS NULL LIMIT 1",
        [o.providerUuid],
      );
      if (open.rowCount === 0 || this.#serving.size >= INTAKE_CONCURRENCY) return;
      const taken = await o.fence(async (client) => {
        // Taken under an earlier generation and never answered: that leader may have acted.
        await client.query(
          `UPDATE fred_inbox SET status = $2, answer_headers = $3, answer_body = $4
           WHERE provider_uuid = $1 AND status IS NULL
             AND taken_generation < (SELECT generation FROM fred_leader WHERE provider_uuid = $1)`,
          [
            o.providerUuid,
            OUTCOME_UNKNOWN.status,
            JSON.stringify(OUTCOME_UNKNOWN.headers),
            Buffer.from(OUTCOME_UNKNOWN.body),
          ],
        );
        return (
          await client.query<RelayedRequest & { id: string; remote_address: string }>(
            `UPDATE fred_inbox SET taken_generation = (SELECT generation FROM fred_leader WHERE provider_uuid = $1)
             WHERE id IN (SELECT id FROM fred_inbox WHERE provider_uuid = $1 AND taken_generation IS NULL
                          ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED)
             RETURNING id, method, url, headers, remote_address, body`,
            [o.providerUuid, INTAKE_CONCURRENCY - this.#serving.size],
          )
        ).rows;
      });
      for (const row of taken) {
        const serving = this.#serve(row.id, {
          method: row.method,
          url: row.url,
          headers: row.headers,
          remoteAddress: row.remote_address,
          body: row.body,
        }).finally(() => {
          this.#serving.delete(serving);
          // Room again: more may wait than one look took.
          this.#kick();
        });
        this.#serving.add(serving);
      }
    } catch (err) {
      o.logger.warn({ err: describePgError(err) }, "leader: taking journaled requests failed");
    }
  }

  async #serve(id: string, request: RelayedRequest): Promise<void> {
    const o = this.#o;
    let answer: RelayedAnswer;
    try {
      answer = await o.serve(request);
    } catch (err) {
      o.logger.error({ err }, "leader: serving a journaled request failed");
      answer = { ...OUTCOME_UNKNOWN, body: Buffer.from(OUTCOME_UNKNOWN.body) };
    }
    try {
      await o.fence((client) =>
        client.query(
          `UPDATE fred_inbox SET status = $2, answer_headers = $3, answer_body = $4
           WHERE id = $1 AND status IS NULL
             AND taken_generation = (SELECT generation FROM fred_leader WHERE provider_uuid = $5)`,
          [id, answer.status, JSON.stringify(answer.headers), answer.body, o.providerUuid],
        ),
      );
    } catch (err) {
      // Deposed meanwhile: the next leader answers it 503 (its outcome is unknown to it).
      o.logger.warn({ err: describePgError(err) }, "leader: could not record a journaled request's answer");
    }
  }
}

/** The body, at most `limit` bytes of it (the rest read and dropped); undefined when the client went away. */
function readUpTo(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      if (size >= limit) return;
      const kept = chunk.subarray(0, limit - size);
      chunks.push(kept);
      size += kept.length;
    });
    req.once("end", () => resolve(Buffer.concat(chunks, size)));
    req.once("error", () => resolve(undefined));
    req.once("close", () => {
      if (!req.complete) resolve(undefined);
    });
  });
}
