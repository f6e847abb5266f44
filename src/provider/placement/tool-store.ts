import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { createLogger } from "../../log.ts";
import { openPostgres, printableUrl } from "../../pg/open.ts";
import { readDatabasePassword } from "../../pg/password.ts";
import type { TransactionRunner } from "../../pg/transaction.ts";
import type { ProviderConfig } from "../config/index.ts";
import { LeaderLease } from "../ha/leader-lease.ts";
import {
  backupBeside,
  createPlacementsOnPostgres,
  type NewBackendPin,
  openPlacementsOnPostgres,
  PlacementStore,
  PROVIDERD_PG_MIGRATIONS,
} from "../store/index.ts";
import { placementStoreFile } from "./store-file.ts";

/**
 * The placement store as the placement tools open it: the SQLite file, or with
 * database_url the store in PostgreSQL, loaded into an in-memory copy (one consistent
 * snapshot of its tables). Read-only, that copy refuses writes, and the instances may run.
 * To change the store, a tool holds the leader lease for its whole run, as an instance
 * would: its writes commit only under it, and no instance leads meanwhile; an instance
 * that leads now makes the tool refuse (stop the instances first, as providerd is stopped
 * for the file). The schema must be this release's: a tool migrates nothing (but init,
 * which creates the store, creates the schema).
 */
export interface ToolStore extends AsyncDisposable {
  readonly store: PlacementStore;
  /** Where the store lives, as shown: the file, or the database URL. */
  readonly where: string;
  /** Copies the store as it is now (before the tool changes it); the copy's path. */
  backup(now: number): Promise<string>;
}

export interface ToolStoreOptions {
  readonly: boolean;
  /**
   * `fred placement init`: create the store with these pins instead of opening it (on
   * PostgreSQL it then also creates the schema; the tables must hold nothing).
   */
  create?: { backends: readonly NewBackendPin[]; now: number };
  /** A writing tool's own refusal (its error code), for a database an instance leads. */
  refuse?: (message: string) => FredError;
  env?: NodeJS.ProcessEnv;
}

/** Named after the file a backup of the store in PostgreSQL is named after, in state_dir. */
const POSTGRES_BACKUP_NAME = "placements-postgres.db";

export async function openToolStore(
  config: ProviderConfig,
  tool: string,
  o: ToolStoreOptions,
): Promise<ToolStore> {
  if (config.databaseUrl === undefined) {
    const path = placementStoreFile(config, tool);
    if (o.create !== undefined) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const store =
      o.create === undefined
        ? PlacementStore.open(path, config.providerUuid, { readonly: o.readonly })
        : PlacementStore.create(path, config.providerUuid, o.create.backends, o.create.now);
    return {
      store,
      where: path,
      backup: (now) => backupBeside(store, now),
      [Symbol.asyncDispose]: async () => store.close(),
    };
  }
  const password = readDatabasePassword(config.databasePasswordFile, o.env ?? process.env);
  const pool = await openPostgres({
    url: config.databaseUrl,
    ...(password === undefined ? {} : { password }),
    label: "providerd database",
    migrations: PROVIDERD_PG_MIGRATIONS,
    applyMigrations: o.create !== undefined,
    maxConnections: 2,
  });
  let lease: LeaderLease | undefined;
  const release = async () => {
    await lease?.stop();
    await pool.end();
  };
  try {
    let fence: TransactionRunner = () =>
      Promise.reject(new FredError("ERR_NOT_LEADER", "a read-only copy of the placement store"));
    if (!o.readonly) {
      lease = new LeaderLease({
        pool,
        providerUuid: config.providerUuid,
        instance: `${tool} ${randomUUID()}`,
        clock: systemClock,
        logger: createLogger("placement-tool", "silent"),
      });
      const state = await lease.tryNow();
      if (state.role !== "leader") {
        lease = undefined;
        const message =
          `a providerd instance leads this provider (${state.leader ?? "unknown"}); stop every instance first, ` +
          `then run ${tool} again (the lease of one that stopped without releasing it expires within 15 s)`;
        throw o.refuse?.(message) ?? new FredError("ERR_CONFIG", message);
      }
      lease.start(); // renewed for as long as the tool runs (it may wait on backends)
      const held = lease;
      fence = (work) => held.fenced(work);
    }
    // As for the file: a read shows a restored copy, a change needs it attested first.
    const store =
      o.create === undefined
        ? await openPlacementsOnPostgres(
            { pool, fence },
            config.providerUuid,
            o.readonly ? { restoredCopy: "allow" } : {},
          )
        : await createPlacementsOnPostgres(
            { pool, fence },
            config.providerUuid,
            o.create.backends,
            o.create.now,
          );
    return {
      store,
      where: printableUrl(config.databaseUrl),
      backup: (now) => backupBeside(store, now, join(config.stateDir, POSTGRES_BACKUP_NAME)),
      [Symbol.asyncDispose]: async () => {
        store.close();
        await release();
      },
    };
  } catch (err) {
    await release().catch(() => {});
    throw err;
  }
}
