import type { Command } from "commander";
import { systemClock } from "../core/clock.ts";
import { FredError } from "../core/errors.ts";
import { parseProviderConfig, readConfigFile } from "../provider/config/index.ts";
import { CometRpcChainHistory } from "../provider/placement/chain-history.ts";
import {
  initPlacementStore,
  inspectPlacementCopy,
  inspectPlacementStore,
} from "../provider/placement/init.ts";
import { printJson, say } from "./output.ts";
import { registerPlacementTools } from "./placement-tools.ts";

/** Chain and backend reads of `placement init` share this overall budget. */
const INIT_BUDGET_MS = 60_000;

export function registerPlacementCommands(program: Command): void {
  const placement = program
    .command("placement")
    .description("Create and inspect providerd's placement store (lease → backend authority)");

  placement
    .command("init")
    .description("Create the placement store for a NEW provider whose backends are empty")
    .requiredOption("--config <file>", "providerd YAML configuration")
    .addHelpText(
      "after",
      `
Refuses unless the chain shows no lease history for provider_uuid (any state), and every
configured backend answers complete, empty /provisions and /retentions. Pins each
backend's storage ID from its X-Fred-Backend-Storage-ID header and records the empty
inventory baseline. Backends must be certificate-verified https://, or plain http:// on
loopback (development). Never replaces an existing store: after a loss, restore a backup.
With database_url it creates the schema and the store in an empty PostgreSQL database
(no providerd instance may lead meanwhile).

Prints a JSON summary on stdout and exits 0.

Examples:
  $ fred placement init --config providerd.yaml
  $ fred placement init --config examples/providerd.yaml | jq .backends`,
    )
    .action(async (opts: { config: string }) => {
      const config = parseProviderConfig(await readConfigFile(opts.config), process.env);
      const summary = await initPlacementStore(config, {
        chain: new CometRpcChainHistory(config.rpcUrl),
        clock: systemClock,
        signal: AbortSignal.timeout(INIT_BUDGET_MS),
      });
      say(
        `placement store created at ${summary.placement_store} (${summary.backends.length} backend(s) pinned)`,
      );
      printJson(summary);
    });

  placement
    .command("inspect")
    .description("Print the placement store's records: pins, baselines, placements, conflicts, attempts")
    .option("--config <file>", "providerd YAML configuration (reads placement_store_db_path)")
    .option("--file <snapshot>", "a snapshot or backup copy of a placement store, instead of --config")
    .addHelpText(
      "after",
      `
Read-only: opens placement_store_db_path (bound to provider_uuid; offline), with
database_url the store in PostgreSQL (one consistent snapshot, while instances run; the
schema must be this release's), or with --file a snapshot/backup copy (whichever provider
it belongs to), and prints one JSON document on stdout. copy_taken_at is set for a copy
that has not been attested.

Examples:
  $ fred placement inspect --config providerd.yaml
  $ fred placement inspect --config providerd.yaml | jq '.attempts[]'
  $ fred placement inspect --file /var/backups/fred/20261201T120000000Z/placements.db`,
    )
    .action(async (opts: { config?: string; file?: string }) => {
      if ((opts.config === undefined) === (opts.file === undefined)) {
        throw new FredError(
          "ERR_USAGE",
          "placement inspect needs exactly one of --config <file> or --file <snapshot>",
        );
      }
      if (opts.file !== undefined) return printJson(inspectPlacementCopy(opts.file));
      const config = parseProviderConfig(await readConfigFile(opts.config as string), process.env);
      printJson(await inspectPlacementStore(config));
    });

  registerPlacementTools(placement);
}
