import { randomUUID } from "node:crypto";
import { systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { createLogger } from "../../log.ts";
import { openPostgres } from "../../pg/open.ts";
import { readDatabasePassword } from "../../pg/password.ts";
import type { TransactionRunner } from "../../pg/transaction.ts";
import type { ProviderConfig } from "../config/index.ts";
import { bindSharedApiSocket, type SharedApiSocket } from "../http/bind.ts";
import { listenerOptions } from "../http/listener.ts";
import type { Lifecycle } from "../lifecycle/index.ts";
import type { DaemonParts, ProviderdOptions, ProviderdState, RunningProviderd } from "../running.ts";
import {
  type OpenStores,
  openPlacementsOnPostgres,
  PgPayloadStore,
  PgTokenTracker,
  PROVIDERD_PG_MIGRATIONS,
} from "../store/index.ts";
import { InboxIntake, InboxSender } from "./inbox.ts";
import { LEADER_RENEW_MS, LEADER_TTL_MS, LeaderLease } from "./leader-lease.ts";
import { type StandbyServer, serveStandby } from "./standby.ts";

type StartDaemon = (
  config: ProviderConfig,
  opts: ProviderdOptions,
  parts: DaemonParts,
) => Promise<RunningProviderd>;

/** After a failed start as leader, this long before campaigning again (another instance may do better). */
const RETRY_LEAD_MS = 5_000;

/**
 * providerd with `database_url` (issue #36): one of several instances sharing a PostgreSQL
 * database, of which one leads (ha/leader-lease.ts).
 *
 * An instance binds its API address, serves as a standby (ha/standby.ts: health, readiness,
 * metrics, and everything else forwarded to the leader, ha/forwarder.ts, or journaled for
 * it in the database when its address refuses, ha/inbox.ts) and campaigns.
 * When it wins, it hands the address to the whole daemon (main.ts's composition, as on
 * SQLite) over stores in PostgreSQL: the placement store loaded fresh into its mirror,
 * every durable write fenced by the lease's generation, and takes in what standbys
 * journaled (ha/inbox.ts). Startup recovery then does what a restart does: it
 * resumes every unresolved attempt from the write-ahead records and sweeps chain and
 * backends, so the gap while nobody led is covered. When it loses the lease (another took
 * it after a pause or partition; the database was out of reach past its deadline), its
 * mirror already refuses writes, and it stops the daemon and serves as a standby again.
 * The API address is bound once (http/bind.ts's shared socket) and served in turn by the
 * standby and the daemon: it refuses and resets nothing at a change of role.
 */
export async function startReplicatedProviderd(
  config: ProviderConfig,
  opts: ProviderdOptions,
  startDaemon: StartDaemon,
): Promise<RunningProviderd> {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger("providerd", config.logLevel);
  const log = logger.child({ component: "ha" });
  const password = readDatabasePassword(config.databasePasswordFile, opts.env);
  const pool = await openPostgres({
    url: config.databaseUrl!,
    ...(password === undefined ? {} : { password }),
    label: "providerd database",
    migrations: PROVIDERD_PG_MIGRATIONS,
    logger: log,
  });
  const instance = randomUUID();
  const listener = listenerOptions(config);
  let lease: LeaderLease | undefined;
  // Cut off from the leader's address, a standby journals requests in the database.
  const inbox = new InboxSender({
    pool,
    providerUuid: config.providerUuid,
    instance,
    maxBodyBytes: config.maxRequestBodySize,
    answerWaitMs: listener.readTimeoutMs + listener.writeTimeoutMs,
    clock,
    logger: log,
  });
  const standbySources = {
    providerUuid: config.providerUuid,
    instance,
    leadership: () => lease!.current(),
    leaderAddress: () => lease!.leaderAddress,
    leaseRead: () => lease?.read ?? false,
    databaseOk: async () => {
      try {
        await pool.query("SELECT 1");
        return true;
      } catch {
        return false;
      }
    },
    listener,
    // By then a new leader serves, if any instance can: it takes the lease within the TTL
    // and one renewal, and its daemon starts well within one more.
    holdMs: LEADER_TTL_MS + 2 * LEADER_RENEW_MS,
    inbox,
    clock,
    logger: log,
  };
  // One API address for the instance's life, served in turn by the standby and the daemon.
  let address: SharedApiSocket;
  let standby: StandbyServer | undefined;
  try {
    address = await bindSharedApiSocket(config.apiListenAddr, listener.tls === undefined ? "http" : "https");
    try {
      standby = await serveStandby(address.lend(), standbySources);
    } catch (err) {
      await address.close();
      throw err;
    }
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  const url = address.url;
  lease = new LeaderLease({
    pool,
    providerUuid: config.providerUuid,
    instance,
    address: config.haAdvertiseUrl ?? url,
    clock,
    logger: log,
    onChange: () => settle(),
  });
  const fence: TransactionRunner = (work) => lease!.fenced(work);
  const stores: OpenStores = async (releases) => {
    const placement = releases.use(
      "placement store",
      await openPlacementsOnPostgres({ pool, fence }, config.providerUuid),
    );
    return {
      placement,
      payloads: new PgPayloadStore(pool, fence),
      tokens: new PgTokenTracker(pool),
      snapshots: undefined,
    };
  };

  let daemon: RunningProviderd | undefined;
  // While the daemon serves: requests other instances journaled are served by it.
  let intake: InboxIntake | undefined;
  let stopping = false;
  let retry: (() => void) | undefined;
  // Role changes run one at a time, in order.
  let changes = Promise.resolve();
  const settle = (): void => {
    changes = changes.then(toRole).catch((err: unknown) => log.error({ err }, "changing role failed"));
  };

  async function toRole(): Promise<void> {
    if (stopping) return;
    const leads = lease!.isLeader();
    if (leads && daemon === undefined) {
      // The standby answers until the daemon serves (503 with Retry-After to what it would
      // forward: nobody serves yet); from then on the address's connections go to the daemon.
      try {
        log.info({ instance, generation: lease!.current().generation }, "leading: starting the daemon");
        daemon = await startDaemon(
          config,
          { ...opts, clock, logger },
          { stores, leadership: lease!, apiSocket: address.lend() },
        );
        const serving = daemon;
        intake = new InboxIntake({
          pool,
          fence,
          providerUuid: config.providerUuid,
          instance,
          serve: (r) => serving.serveRelayed(r),
          clock,
          logger: log,
        });
        intake.start();
        await standby?.close();
        standby = undefined;
        await inbox.quiet();
      } catch (err) {
        // Give the lease up so another instance can lead; campaign again later.
        log.error({ err }, "could not start as leader; standing by");
        await lease!.stop();
        standby ??= await serveStandby(address.lend(), standbySources);
        retry = clock.setTimer(RETRY_LEAD_MS, () => {
          if (!stopping) lease!.start();
        });
      }
      return;
    }
    if (!leads && daemon !== undefined) {
      log.warn({ instance }, "no longer leading: stopping the daemon");
      const stopped = daemon;
      daemon = undefined;
      // The standby takes the address's new connections first, then the daemon stops.
      standby = await serveStandby(address.lend(), standbySources);
      await intake?.stop();
      intake = undefined;
      await stopped.stop();
    }
  }

  lease.start();
  return {
    url,
    get operatorUrl() {
      return daemon?.operatorUrl;
    },
    get state(): ProviderdState {
      if (stopping) return "stopping";
      return daemon?.state ?? "running";
    },
    get lifecycle(): Lifecycle {
      if (daemon === undefined) throw notLeading();
      return daemon.lifecycle;
    },
    reloadTls: () => daemon?.reloadTls() ?? standby?.reloadTls() ?? false,
    reconcile: () => (daemon === undefined ? Promise.reject(notLeading()) : daemon.reconcile()),
    serveRelayed: (r) => (daemon === undefined ? Promise.reject(notLeading()) : daemon.serveRelayed(r)),
    async stop() {
      if (stopping) return;
      stopping = true;
      retry?.();
      await changes;
      await intake?.stop();
      // The daemon first (its last writes are still fenced by a live lease), then the lease
      // is released so a standby leads at its next try.
      await daemon?.stop();
      await standby?.close();
      await inbox.close();
      await address.close();
      await lease!.stop();
      await pool.end();
    },
  };
}

function notLeading(): FredError {
  return new FredError("ERR_NOT_LEADER", "this providerd instance is a standby; the leader does this");
}
