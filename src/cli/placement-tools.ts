import type { Command } from "commander";
import { systemClock } from "../core/clock.ts";
import { isFredError } from "../core/errors.ts";
import { readDatabasePassword } from "../pg/password.ts";
import { parseProviderConfig, readConfigFile } from "../provider/config/index.ts";
import { attestRestoredBackup, snapshotStores } from "../provider/placement/copies.ts";
import { addBackend } from "../provider/placement/membership.ts";
import {
  migrateRefusal,
  migrateToPostgres,
  migrateToSqlite,
  parseMigrateSource,
  parseMigrateTarget,
} from "../provider/placement/migrate.ts";
import { repairPlacements } from "../provider/placement/repair.ts";
import { retireBackend } from "../provider/placement/retire.ts";
import { ExitCode, printJson, say } from "./output.ts";

/** Backend reads of a membership change share this overall budget. */
const READ_BUDGET_MS = 60_000;

/**
 * The fleet tools on `fred placement`: membership changes, snapshots, repair. Each
 * prints exactly one JSON document on stdout; a refusal prints {"ok":false,"error",
 * "code"} there too (and the message on stderr) and exits 1.
 */
async function oneResult(run: () => Promise<object>): Promise<void> {
  try {
    printJson({ ok: true, ...(await run()) });
  } catch (err) {
    if (!isFredError(err)) throw err;
    say(`fred: ${err.message}`);
    printJson({ ok: false, error: err.message, code: err.code });
    throw new ExitCode(1);
  }
}

async function configFrom(path: string) {
  return parseProviderConfig(await readConfigFile(path), process.env);
}

export function registerPlacementTools(placement: Command): void {
  placement
    .command("add-backend")
    .description(
      "Pin a new, empty backend that is already listed in the config (providerd stopped; with database_url, every instance)",
    )
    .requiredOption("--config <file>", "providerd YAML configuration")
    .requiredOption("--name <backend>", "the new backend's backends[].name")
    .addHelpText(
      "after",
      `
A membership change needs identity-bearing answers from the whole proposed fleet: every
configured backend is read (certificate-verified https://, or http:// on loopback); the
pinned ones must answer as their pinned storage IDs, the new one must be empty with a
storage ID no other backend has. Refused while any backend is fenced or unreachable.
Then a backup is written beside the store (<store>.backup-<time>), the new pin and a
fresh baseline for every backend are recorded, and the JSON result is printed.

Examples:
  $ fred placement add-backend --config providerd.yaml --name docker-2`,
    )
    .action(async (opts: { config: string; name: string }) => {
      const config = await configFrom(opts.config);
      await oneResult(() =>
        addBackend(config, opts.name, { clock: systemClock, signal: AbortSignal.timeout(READ_BUDGET_MS) }),
      );
    });

  placement
    .command("retire-backend")
    .description(
      "Retire a backend removed from the config: drained, or --lost (providerd stopped; with database_url, every instance)",
    )
    .requiredOption("--config <file>", "providerd YAML configuration")
    .requiredOption("--name <backend>", "the backend's name in the placement store")
    .option("--lost", "its storage is irrecoverably lost: providerd ends its leases (BackendStorageLost)")
    .option("--confirm <storage id>", "with --lost: the backend's pinned storage ID, typed out")
    .addHelpText(
      "after",
      `
Without --lost the backend must hold nothing any more (no placement, attempt or conflict
names it): its pin is forgotten. With --lost --confirm <storage id> it is recorded as lost;
when providerd starts it closes the backend's ACTIVE leases and rejects its PENDING ones on
chain with BackendStorageLost, tenant reads of them answer 410 backend_storage_lost, and
each row is pruned once its lease ended. Conflicts naming it are left for repair. A backup
is written beside the store first.

Examples:
  $ fred placement retire-backend --config providerd.yaml --name docker-2
  $ fred placement retire-backend --config providerd.yaml --name docker-2 --lost --confirm 6d1f3a2b-4c5e-4f70-9bac-1d2e3f4a5b6c`,
    )
    .action(async (opts: { config: string; name: string; lost?: boolean; confirm?: string }) => {
      const config = await configFrom(opts.config);
      await oneResult(() =>
        retireBackend(
          config,
          { name: opts.name, lost: opts.lost ?? false, confirm: opts.confirm },
          systemClock,
        ),
      );
    });

  placement
    .command("snapshot")
    .description("Write one consistent snapshot set of the placement and payload stores now")
    .requiredOption("--config <file>", "providerd YAML configuration")
    .option("--dir <directory>", "where to write it (default: placement_snapshot_dir)")
    .addHelpText(
      "after",
      `
Uses SQLite's online backup API through read-only connections, so it runs beside a
running providerd. The set is <dir>/<UTC time>/{placements.db,payloads.db}, files 0600;
older sets beyond placement_snapshot_retain are removed. A restored copy must be attested
before providerd opens it (fred placement repair --attest-restored-backup --apply).

Examples:
  $ fred placement snapshot --config providerd.yaml
  $ fred placement inspect --file /var/backups/fred/20261201T120000000Z/placements.db`,
    )
    .action(async (opts: { config: string; dir?: string }) => {
      const config = await configFrom(opts.config);
      await oneResult(() => snapshotStores(config, systemClock, opts.dir));
    });

  placement
    .command("repair")
    .description("Offline repair of the placement store (dry run unless --apply)")
    .requiredOption("--config <file>", "providerd YAML configuration")
    .option("--apply", "make the changes (a backup is written beside the store first)")
    .option("--attest-restored-backup", "vouch for a store restored from a snapshot or backup")
    .addHelpText(
      "after",
      `
Reads every configured backend's identity-checked inventory and lists the conflicts, the
attempts and the rows whose backend is no longer configured, each with its evidence
(reports / absent / unreachable / not_configured / lost per backend). --apply resolves
only a conflict that exactly one candidate reports while every other candidate answered
without it (it becomes that backend's placement), after writing a backup beside the
store; it needs certificate-verified https:// (or loopback) and no fenced backend, and
never deletes a row. Providerd may run during a dry run; stop it for --apply (with
database_url, stop every instance: the tool holds the leader lease while it writes).

--attest-restored-backup: a restored copy cannot know of leases placed after it was
taken, so providerd refuses it until attested. Attesting removes the copy mark and clears
every inventory baseline, so readiness waits for a fresh complete sweep (which adopts the
leases the copy missed). It reads no backend. Without --apply it only says what it would do.

Examples:
  $ fred placement repair --config providerd.yaml
  $ fred placement repair --config providerd.yaml --apply
  $ fred placement repair --config providerd.yaml --attest-restored-backup
  $ fred placement repair --config providerd.yaml --attest-restored-backup --apply`,
    )
    .action(async (opts: { config: string; apply?: boolean; attestRestoredBackup?: boolean }) => {
      const config = await configFrom(opts.config);
      await oneResult(() =>
        opts.attestRestoredBackup
          ? attestRestoredBackup(config, systemClock, opts.apply ?? false)
          : repairPlacements(config, opts.apply ?? false, {
              clock: systemClock,
              signal: AbortSignal.timeout(READ_BUDGET_MS),
            }),
      );
    });

  placement
    .command("migrate")
    .description("Move a stopped provider's stores between its SQLite files and PostgreSQL, verified")
    .requiredOption("--config <file>", "providerd YAML configuration")
    .requiredOption("--to <target>", "postgres://user@host[:port]/database[?sslmode=…] or sqlite:<directory>")
    .option("--from <url>", "with --to sqlite:, the PostgreSQL database to copy from (default: database_url)")
    .option("--password-file <file>", "the PostgreSQL password, in a 0600 file (else FRED_DATABASE_PASSWORD)")
    .addHelpText(
      "after",
      `
--to postgres://… copies the files the config names (placement_store_db_path, and
payload_store_db_path and token_tracker_db_path when set) into an empty PostgreSQL
database (providerd's schema is created in it). --to sqlite:<directory> copies a
PostgreSQL database's stores (--from, or the config's database_url and its password) into
new files placements.db, payloads.db and tokens.db in that directory.

Nothing is kept unless all of it is: the PostgreSQL copy commits in one transaction only
after every table reads back with the source's row count and SHA-256; the files are
renamed into place only after reading back the same. The source is never changed. It
refuses a target that holds anything, a running providerd (its control socket answers),
a database an instance still leads, and an unattested restored copy. TLS options are
libpq's, in the URL (sslmode=verify-full&sslrootcert=/path/ca.pem); the password never
goes in the URL. Prints the per-table counts and digests, and the config keys to use.

Examples:
  $ FRED_DATABASE_PASSWORD=… fred placement migrate --config providerd.yaml \\
      --to 'postgres://fred@db.example.com/fred?sslmode=verify-full&sslrootcert=/etc/fred/db-ca.pem'
  $ fred placement migrate --config providerd.yaml --password-file /etc/fred/db-password \\
      --from postgres://fred@db.example.com/fred --to sqlite:/var/lib/fred/from-postgres`,
    )
    .action(async (opts: { config: string; to: string; from?: string; passwordFile?: string }) => {
      const config = await configFrom(opts.config);
      await oneResult(async () => {
        const target = parseMigrateTarget(opts.to);
        // The password of the database named on the command line, or of the config's database_url.
        const password =
          opts.passwordFile === undefined && opts.from === undefined && config.databaseUrl !== undefined
            ? readDatabasePassword(config.databasePasswordFile, process.env)
            : readDatabasePassword(opts.passwordFile, process.env, "--password-file");
        if (target.kind === "postgres") {
          if (opts.from !== undefined) {
            throw migrateRefusal("--from goes with --to sqlite: (the files come from the config)");
          }
          return migrateToPostgres(config, target.url, password, say);
        }
        const from = opts.from ?? config.databaseUrl;
        if (from === undefined) {
          throw migrateRefusal("--to sqlite: needs --from postgres://… (or a config with database_url)");
        }
        return migrateToSqlite(config, parseMigrateSource(from), password, target.dir, say);
      });
    });
}
