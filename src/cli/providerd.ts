import type { Command } from "commander";
import { FredError } from "../core/errors.ts";
import { checkProviderConfig, readConfigFile, redactConfig } from "../provider/config/index.ts";
import { ExitCode, printJson, say } from "./output.ts";

interface ProviderdOptions {
  config: string;
  checkConfig?: boolean;
}

/**
 * `fred providerd -c config.yaml`. Today only `--check-config` runs: the daemon's event
 * feed and acknowledgements need the chain client, and we refuse to start a daemon
 * that could not do its job rather than pretend to be one.
 */
export function registerProviderdCommand(program: Command): void {
  program
    .command("providerd")
    .description("The provider daemon: turns chain lease events into workloads on the configured backends")
    .requiredOption("-c, --config <file>", "providerd YAML configuration")
    .option("--check-config", "validate the configuration (file + PROVIDER_<KEY> overrides) and exit")
    .addHelpText(
      "after",
      `
Examples:
  $ fred providerd --check-config -c examples/providerd.yaml
  $ PROVIDER_LOG_LEVEL=debug fred providerd --check-config -c /etc/fred/providerd.yaml

--check-config prints {"ok":true,"config":{…secrets redacted…}} and exits 0, or prints
every problem (one per line on stderr, and {"ok":false,"problems":[…]} on stdout) and
exits 1. Keys and rules: docs/providerd-config.md.`,
    )
    .action(async (opts: ProviderdOptions) => {
      const result = checkProviderConfig(await readConfigFile(opts.config), process.env);
      if (!result.ok) {
        say(`fred providerd: ${opts.config} has ${result.problems.length} problem(s):`);
        for (const p of result.problems) say(`  - ${p}`);
        printJson({ ok: false, problems: result.problems });
        throw new ExitCode(1);
      }
      if (opts.checkConfig) {
        say(`fred providerd: ${opts.config} is valid`);
        printJson({ ok: true, config: redactConfig(result.config) });
        return;
      }
      throw new FredError(
        "ERR_PROVIDERD_NEEDS_CHAIN_CLIENT",
        "the provider daemon cannot run yet: it needs the chain client (event feed, lease queries and " +
          "acknowledgement transactions), which is not part of this build. The configuration is valid; " +
          "use --check-config to validate it and `fred placement init|inspect` to prepare the placement store.",
      );
    });
}
