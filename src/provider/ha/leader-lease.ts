import type pg from "pg";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { describePgError } from "../../pg/open.ts";
import { inTransaction } from "../../pg/transaction.ts";
import type { LeaderState, Leadership } from "./leadership.ts";

export type { LeaderState, Role } from "./leadership.ts";

/**
 * One leader among the providerd instances that share a PostgreSQL database (issue #36).
 *
 * The lease is one row per provider: who holds it, until when (the database's clock, so
 * instances need not agree on time), and a fencing generation that grows at every change
 * of holder. A standby takes the row only once it has expired; the holder extends it every
 * `renewMs`. Safety does not rest on timers:
 * - every durable write of the leader goes through `fenced()`, whose transaction first
 *   locks the row (FOR SHARE) at the holder's generation and unexpired. A deposed leader
 *   (a long pause, a partition, a frozen VM) therefore commits nothing. A takeover waits
 *   for fenced transactions already holding the lock (so their commits come first, and the
 *   new leader reads them), and the server ends a transaction left idle by a frozen
 *   process (`idle_in_transaction_session_timeout`, src/pg/open.ts);
 * - effects outside the database (backend calls, chain transactions) ask `isLeader()`
 *   first, which is false from `ttlMs` after the last successful extension was *sent*: the
 *   row cannot expire, and so no standby can lead, before that moment.
 * An extension waits for the fenced transactions in flight (they hold the row FOR SHARE;
 * PostgreSQL queues the update behind them, it does not starve: 30–720 ms behind six
 * overlapping 20 ms transactions here), so fenced transactions must stay short.
 *
 * An instance that finds itself deposed says so (`onChange`) and campaigns again as a
 * standby; one whose own lease outlived its local deadline (the database was out of reach)
 * takes it back at once, one generation up, so its stale work stays fenced. A holder that
 * stops releases the row so a standby leads at its next try.
 */
export const LEADER_TTL_MS = 15_000;
export const LEADER_RENEW_MS = 5_000;
/** Kept off the local deadline for differences between this clock's rate and the database's. */
const CLOCK_MARGIN_MS = 500;
/** How long after the live lease's expiry (by the database's clock) a standby campaigns. */
const EXPIRY_MARGIN_MS = 100;

/** The lease table: migration of providerd's PostgreSQL schema. */
export const LEADER_LEASE_MIGRATION = `CREATE TABLE fred_leader (
  provider_uuid uuid PRIMARY KEY,
  holder text NOT NULL,
  generation bigint NOT NULL CHECK (generation > 0),
  expires_at timestamptz NOT NULL
)`;

/** Where the leader serves, so standbys can forward to it: migration of providerd's PostgreSQL schema. */
export const LEADER_ADDRESS_MIGRATION = "ALTER TABLE fred_leader ADD COLUMN address text";

export interface LeaderLeaseOptions {
  pool: pg.Pool;
  providerUuid: string;
  /** Unique per process start (a restarted instance is a new candidate). */
  instance: string;
  /** The URL other instances reach this one at while it leads (ha_advertise_url, or its bound API URL). */
  address?: string;
  clock: Clock;
  logger: Logger;
  ttlMs?: number;
  renewMs?: number;
  onChange?: (state: LeaderState) => void;
}

export class LeaderLease implements Leadership {
  readonly #o: LeaderLeaseOptions;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  #state: LeaderState = { role: "standby", generation: undefined, leader: undefined };
  /** Local time after which this instance no longer counts itself leader without a new extension. */
  #validUntil = 0;
  #timer: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  /** The live leader's advertised address, as last seen (this instance's own while it leads). */
  #leaderAddress: string | undefined;
  /** A standby's last look at the live lease: milliseconds until it expires (undefined: none seen). */
  #expiresInMs: number | undefined;
  #read = false;

  constructor(o: LeaderLeaseOptions) {
    this.#o = o;
    this.#ttlMs = o.ttlMs ?? LEADER_TTL_MS;
    this.#renewMs = o.renewMs ?? LEADER_RENEW_MS;
    if (!(this.#renewMs > 0 && this.#renewMs * 2 <= this.#ttlMs)) {
      throw new FredError(
        "ERR_INVALID_ARGUMENT",
        `leader lease: renewal every ${this.#renewMs} ms must fit twice in the ${this.#ttlMs} ms lease`,
      );
    }
  }

  get instance(): string {
    return this.#o.instance;
  }

  /** The state as /health and the metrics report it (Leadership). */
  current(): LeaderState {
    return this.state;
  }

  get state(): LeaderState {
    if (this.#state.role === "leader" && !this.isLeader()) this.#stepDown("lease not extended in time");
    return { ...this.#state };
  }

  /** Where the leader last seen serves (undefined: none live, or it advertised none). */
  get leaderAddress(): string | undefined {
    return this.#state.leader === undefined ? undefined : this.#leaderAddress;
  }

  /** Whether a campaign has read the lease yet: until then, who leads is not known here. */
  get read(): boolean {
    return this.#read;
  }

  /** True while this instance holds an unexpired lease (ask before every effect outside the database). */
  isLeader(): boolean {
    return this.#state.role === "leader" && this.#o.clock.now() < this.#validUntil;
  }

  /** Campaigns now, then every `renewMs` (extending the lease while it leads). */
  start(): void {
    this.#stopped = false;
    this.#tick();
  }

  /** One campaign or extension now; resolves when it is done (tests, and a first try before `start()`; not while started). */
  async tryNow(): Promise<LeaderState> {
    await this.#once();
    return this.state;
  }

  #tick = (): void => {
    if (this.#stopped) return;
    this.#running = this.#once().finally(() => {
      this.#running = undefined;
      if (!this.#stopped) this.#timer = this.#o.clock.setTimer(this.#nextTickMs(), this.#tick);
    });
  };

  /**
   * Every `renewMs`; but a standby that saw the live lease expire sooner (its holder stopped
   * extending it: dead, frozen, cut off) campaigns just after that expiry, so a takeover
   * takes the TTL after the holder's last extension, not up to one more renewal period.
   */
  #nextTickMs(): number {
    const expiresIn = this.#state.role === "leader" ? undefined : this.#expiresInMs;
    this.#expiresInMs = undefined;
    return expiresIn === undefined ? this.#renewMs : Math.min(this.#renewMs, expiresIn + EXPIRY_MARGIN_MS);
  }

  async #once(): Promise<void> {
    try {
      if (this.#state.role === "leader") {
        await this.#extend(this.#o.clock.now());
        if (this.#state.role === "leader") return;
      }
      // A standby, or a leader that just learned it was deposed: campaign (and see who leads).
      await this.#campaign(this.#o.clock.now());
    } catch (err) {
      // The database is unreachable or refused: a leader keeps leading until its local
      // deadline (the row cannot have expired before it), a standby stays one.
      this.#o.logger.warn({ err: describePgError(err) }, "leader lease: database call failed");
      if (this.#state.role === "leader" && !this.isLeader()) this.#stepDown("lease not extended in time");
    }
  }

  async #campaign(sentAt: number): Promise<void> {
    const { pool, providerUuid, instance } = this.#o;
    const taken = await pool.query<{ generation: string }>(
      `INSERT INTO fred_leader AS l (provider_uuid, holder, generation, expires_at, address)
       VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 millisecond', $4)
       ON CONFLICT (provider_uuid) DO UPDATE
         SET holder = EXCLUDED.holder, generation = l.generation + 1, expires_at = EXCLUDED.expires_at,
             address = EXCLUDED.address
         WHERE l.expires_at <= clock_timestamp() OR l.holder = EXCLUDED.holder
       RETURNING generation`,
      [providerUuid, instance, this.#ttlMs, this.#o.address ?? null],
    );
    if (this.#stopped) return;
    const row = taken.rows[0];
    if (row !== undefined) {
      this.#read = true;
      this.#validUntil = sentAt + this.#ttlMs - CLOCK_MARGIN_MS;
      this.#leaderAddress = this.#o.address;
      this.#set({ role: "leader", generation: Number(row.generation), leader: instance });
      this.#o.logger.info({ generation: Number(row.generation) }, "leader lease: this instance leads");
      return;
    }
    const seen = await pool.query<{
      holder: string;
      live: boolean;
      address: string | null;
      expires_in_ms: number;
    }>(
      `SELECT holder, address, expires_at > clock_timestamp() AS live,
         GREATEST(0, EXTRACT(EPOCH FROM expires_at - clock_timestamp()) * 1000)::float8 AS expires_in_ms
       FROM fred_leader WHERE provider_uuid = $1`,
      [providerUuid],
    );
    const holder = seen.rows[0]?.live === true ? seen.rows[0].holder : undefined;
    this.#expiresInMs = holder === undefined ? undefined : seen.rows[0]!.expires_in_ms;
    this.#leaderAddress = holder === undefined ? undefined : (seen.rows[0]!.address ?? undefined);
    this.#read = true;
    if (holder !== this.#state.leader) this.#set({ ...this.#state, leader: holder });
  }

  async #extend(sentAt: number): Promise<void> {
    const { pool, providerUuid, instance } = this.#o;
    const extended = await pool.query(
      `UPDATE fred_leader SET expires_at = clock_timestamp() + $3 * interval '1 millisecond'
       WHERE provider_uuid = $1 AND holder = $2 AND generation = $4 AND expires_at > clock_timestamp()`,
      [providerUuid, instance, this.#ttlMs, this.#state.generation],
    );
    if (extended.rowCount === 1) this.#validUntil = sentAt + this.#ttlMs - CLOCK_MARGIN_MS;
    else this.#stepDown("the lease expired or another instance took it");
  }

  /**
   * Runs `work` in one transaction that commits only while this instance holds the lease
   * at its generation; otherwise nothing of it commits and ERR_NOT_LEADER is thrown (and
   * this instance steps down).
   */
  async fenced<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const generation = this.#state.generation;
    if (!this.isLeader() || generation === undefined) throw notLeader();
    return inTransaction(this.#o.pool, async (client) => {
      const held = await client.query(
        `SELECT 1 FROM fred_leader WHERE provider_uuid = $1 AND holder = $2 AND generation = $3
           AND expires_at > clock_timestamp() FOR SHARE`,
        [this.#o.providerUuid, this.#o.instance, generation],
      );
      if (held.rowCount !== 1) {
        this.#stepDown("a fenced write found the lease gone");
        throw notLeader();
      }
      return work(client);
    });
  }

  /** Stops campaigning; a leader releases the row so a standby leads at its next try. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.();
    await this.#running;
    if (this.#state.role !== "leader") return;
    const generation = this.#state.generation;
    this.#set({ role: "standby", generation: undefined, leader: undefined });
    try {
      await this.#o.pool.query(
        `UPDATE fred_leader SET expires_at = clock_timestamp()
         WHERE provider_uuid = $1 AND holder = $2 AND generation = $3`,
        [this.#o.providerUuid, this.#o.instance, generation],
      );
    } catch (err) {
      // The row then expires on its own within the TTL.
      this.#o.logger.warn({ err: describePgError(err) }, "leader lease: could not release");
    }
  }

  #stepDown(why: string): void {
    if (this.#state.role !== "leader") return;
    this.#validUntil = 0;
    this.#o.logger.warn({ generation: this.#state.generation }, `leader lease: standing down: ${why}`);
    this.#set({ role: "standby", generation: undefined, leader: undefined });
  }

  #set(next: LeaderState): void {
    this.#state = next;
    this.#o.onChange?.({ ...next });
  }
}

function notLeader(): FredError {
  return new FredError("ERR_NOT_LEADER", "this providerd instance does not hold the leader lease", {
    retryable: false,
  });
}
