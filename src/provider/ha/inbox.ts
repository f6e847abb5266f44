import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";
import type pg from "pg";
import { PeriodicPass } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { PgListener } from "../../pg/listen.ts";
import { describePgError } from "../../pg/open.ts";
import type { TransactionRunner } from "../../pg/transaction.ts";
import { HOP_BY_HOP } from "../http/hop-by-hop.ts";

/**
 * Requests a standby cannot hand to the leader directly (its address refuses them, or does
 * not connect: a partition between instances, or a leader that just died) are journaled in
 * PostgreSQL instead, which every instance reaches (issue #36): the standby commits the
 * request to `fred_inbox` and waits; the leader's intake takes it, fenced by its
 * generation, serves it through its own HTTP routes (so every validation and answer is
 * exactly the one a direct request gets) and commits the answer, which the standby sends
 * back to its client. Each side hears of the other's row by PostgreSQL's NOTIFY.
 *
 * Nothing is carried out twice: a request is taken once, under one generation; a request
 * whose leader stopped leading before answering is answered 503 by the next leader, never
 * served again (the old leader may have acted on it), as a forward that loses its leader
 * is (ha/forwarder.ts). A request no leader took within the hold is withdrawn (only while
 * still untaken) and answered 503: it never ran.
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

/**
 * The leader hears of a journaled request at once (NOTIFY on CHANNEL, the provider's UUID
 * as payload), and a waiting standby of its answer (on ANSWERS, the request's id); each
 * also looks now and then, for what was notified while it did not listen.
 */
const CHANNEL = "fred_inbox";
const ANSWERS = "fred_inbox_answers";
/** How often a standby looks for the answers it waits for (one query for all of them). */
const ANSWER_POLL_MS = 100;
/** How often the leader looks for journaled requests without being notified. */
const INTAKE_POLL_MS = 30_000;
/** A standby waiting for nothing looks this rarely (its look then queries nothing). */
const IDLE_POLL_MS = 60_000;
/** Requests the leader serves at once from the inbox; more wait for the next look. */
const INTAKE_CONCURRENCY = 32;
/** Rows older than this are removed by the leader (answers nobody collected: their client left). */
const KEEP_ROWS_MS = 60 * 60_000;
const SWEEP_EVERY_MS = 60_000;
/** Never journaled: the connection's own headers, and content-length (set from the body journaled). */
const NOT_JOURNALED = new Set([...HOP_BY_HOP, "content-length"]);

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

/**
 * Serves a journaled request through `app`'s whole pipeline (edge limits, authentication,
 * routes) without a socket: the journaled client's own address is the one rate limits and
 * logs see.
 */
export async function serveThrough(app: FastifyInstance, r: RelayedRequest): Promise<RelayedAnswer> {
  const answer = await app.inject({
    method: r.method as "POST",
    url: r.url,
    headers: r.headers,
    payload: r.body,
    remoteAddress: r.remoteAddress,
  });
  return { status: answer.statusCode, headers: answer.headers, body: answer.rawPayload };
}

export interface InboxOptions {
  pool: pg.Pool;
  providerUuid: string;
  instance: string;
  clock: Clock;
  logger: Logger;
}

/** How a journaled request ended for the standby that received it (`fred_standby_journaled_requests_total`). */
export type JournaledOutcome = "answered" | "withdrawn" | "unanswered" | "not_journaled";

/** A standby says it journals requests at most this often (a partition would say it per request). */
const WARN_EVERY_MS = 60_000;

interface Waiter {
  /** Until then a leader may take it; past it, it is withdrawn if still untaken. */
  takeBy: number;
  /** Past it, a taken request whose answer has not come is given up (503). */
  answerBy: number;
  taken: boolean;
  done: (answer: RelayedAnswer | undefined) => void;
}

/**
 * A standby's side: journals a request and waits for the leader's answer. One look reads
 * the answers of every request waiting: when the leader notifies one, and every
 * ANSWER_POLL_MS while some wait. Listens from its first request on, until closed.
 */
export class InboxSender {
  readonly #o: InboxOptions & { maxBodyBytes: number; answerWaitMs: number };
  readonly #waiting = new Map<string, Waiter>();
  readonly #looks: PeriodicPass;
  readonly #answers: PgListener;
  /** Requests by how they ended, since start. */
  readonly outcomes: Record<JournaledOutcome, number> = {
    answered: 0,
    withdrawn: 0,
    unanswered: 0,
    not_journaled: 0,
  };
  #warnedAt = Number.NEGATIVE_INFINITY;

  /** `maxBodyBytes`: max_request_body_size; `answerWaitMs`: how long a taken request may take (the listener's timeouts). */
  constructor(o: InboxOptions & { maxBodyBytes: number; answerWaitMs: number }) {
    this.#o = o;
    this.#looks = new PeriodicPass({
      clock: o.clock,
      intervalMs: () => (this.#waiting.size > 0 ? ANSWER_POLL_MS : IDLE_POLL_MS),
      run: () => this.#look(),
      onError: (err) => o.logger.debug({ err }, "standby: looking for answers failed"),
    });
    this.#answers = new PgListener({
      pool: o.pool,
      channel: ANSWERS,
      heard: (id) => {
        if (this.#waiting.has(id)) this.#looks.runSoon();
      },
      listening: () => this.#looks.runSoon(),
      clock: o.clock,
      logger: o.logger,
    });
    // Looks at nothing while nothing waits (no query), every IDLE_POLL_MS.
    this.#looks.start();
  }

  /** Gives its listening connection back to the pool until its next request (this instance leads now). */
  async quiet(): Promise<void> {
    await this.#answers.stop();
  }

  /** Stops listening and looking; requests still waiting are answered 503. */
  async close(): Promise<void> {
    await Promise.all([this.#answers.stop(), this.#looks.stop()]);
    for (const id of [...this.#waiting.keys()]) this.#settle(id, undefined, "unanswered");
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
    if (o.clock.now() - this.#warnedAt >= WARN_EVERY_MS) {
      this.#warnedAt = o.clock.now();
      o.logger.warn(
        "standby: the leader's address refuses connections; journaling requests in the database for it (a partition between instances, or a leader just gone)",
      );
    }
    this.#answers.start();
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
      this.outcomes.not_journaled++;
      return undefined;
    }
    return new Promise((resolve) => {
      this.#waiting.set(id, {
        takeBy,
        answerBy: Math.max(takeBy, o.clock.now()) + o.answerWaitMs,
        taken: false,
        done: resolve,
      });
      // From now on every ANSWER_POLL_MS (the idle interval may be under way).
      this.#looks.runSoon();
    });
  }

  async #look(): Promise<void> {
    if (this.#waiting.size === 0) return;
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
      for (const [id, w] of this.#waiting)
        if (o.clock.now() >= w.answerBy) this.#settle(id, undefined, "unanswered");
      return;
    }
    const seen = new Map(rows.map((r) => [r.id, r]));
    const now = o.clock.now();
    for (const [id, w] of this.#waiting) {
      const row = seen.get(id);
      if (row === undefined) {
        this.#settle(id, undefined, "unanswered");
        continue;
      }
      if (row.status !== null) {
        this.#settle(
          id,
          {
            status: row.status,
            headers: row.answer_headers ?? {},
            body: row.answer_body ?? Buffer.alloc(0),
          },
          "answered",
        );
        void o.pool.query("DELETE FROM fred_inbox WHERE id = $1", [id]).catch(() => {});
        continue;
      }
      if (row.taken) w.taken = true;
      if (!w.taken && now >= w.takeBy) await this.#withdraw(id, w);
      else if (now >= w.answerBy) this.#settle(id, undefined, "unanswered");
    }
  }

  /** Removes a request no leader took in time, unless one takes it meanwhile. */
  async #withdraw(id: string, w: Waiter): Promise<void> {
    try {
      const gone = await this.#o.pool.query(
        "DELETE FROM fred_inbox WHERE id = $1 AND taken_generation IS NULL",
        [id],
      );
      if (gone.rowCount === 1) this.#settle(id, undefined, "withdrawn");
      else w.taken = true;
    } catch (err) {
      this.#o.logger.debug({ err: describePgError(err) }, "standby: withdrawing a request failed");
      if (this.#o.clock.now() >= w.answerBy) this.#settle(id, undefined, "unanswered");
    }
  }

  #settle(id: string, answer: RelayedAnswer | undefined, outcome: JournaledOutcome): void {
    const w = this.#waiting.get(id);
    if (w === undefined) return;
    this.#waiting.delete(id);
    this.outcomes[outcome]++;
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
  readonly #serving = new Set<Promise<void>>();
  #lastSweep = 0;
  readonly #looks: PeriodicPass;
  readonly #journaled: PgListener;

  constructor(
    o: InboxOptions & { fence: TransactionRunner; serve: (r: RelayedRequest) => Promise<RelayedAnswer> },
  ) {
    this.#o = o;
    this.#looks = new PeriodicPass({
      clock: o.clock,
      intervalMs: () => INTAKE_POLL_MS,
      run: () => this.takeNow(),
      onError: (err) => o.logger.warn({ err }, "leader: taking journaled requests failed"),
    });
    this.#journaled = new PgListener({
      pool: o.pool,
      channel: CHANNEL,
      heard: (provider) => {
        if (provider === o.providerUuid) this.#looks.runSoon();
      },
      listening: () => this.#looks.runSoon(),
      clock: o.clock,
      logger: o.logger,
    });
  }

  start(): void {
    this.#lastSweep = this.#o.clock.now();
    this.#journaled.start();
    this.#looks.start();
  }

  /** Stops taking; resolves once the requests being served are answered. */
  async stop(): Promise<void> {
    await Promise.all([this.#journaled.stop(), this.#looks.stop()]);
    await Promise.all(this.#serving);
  }

  /** One look at the inbox (notifications and INTAKE_POLL_MS ask for it; tests call it). */
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
          `WITH unknown AS (
             UPDATE fred_inbox SET status = $2, answer_headers = $3, answer_body = $4
             WHERE provider_uuid = $1 AND status IS NULL
               AND taken_generation < (SELECT generation FROM fred_leader WHERE provider_uuid = $1)
             RETURNING id)
           SELECT pg_notify('${ANSWERS}', id::text) FROM unknown`,
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
          this.#looks.runSoon();
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
          `WITH answered AS (
             UPDATE fred_inbox SET status = $2, answer_headers = $3, answer_body = $4
             WHERE id = $1 AND status IS NULL
               AND taken_generation = (SELECT generation FROM fred_leader WHERE provider_uuid = $5)
             RETURNING id)
           SELECT pg_notify('${ANSWERS}', id::text) FROM answered`,
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
