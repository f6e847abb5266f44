import type { Command } from "commander";
import { commandClock } from "../core/clock.ts";
import { FredError } from "../core/errors.ts";
import { checkProviderConfig, readConfigFile, redactConfig } from "../provider/config/index.ts";
import { startHeapPolicy } from "../provider/heap-policy.ts";
import { startProviderd } from "../provider/main.ts";
import { controlSocketPath, requestSweep } from "../provider/reconciler/index.ts";
import { ExitCode, printJson, say } from "./output.ts";
import { preflightLines, runPreflight } from "./providerd-preflight.ts";

interface ProviderdOptions {
  config: string;
  checkConfig?: boolean;
  online?: boolean;
}

/** Each chain query and backend request of `--online` gets this long. */
const PREFLIGHT_TIMEOUT_MS = 10_000;

/**
 * `fred providerd -c config.yaml`: validates the configuration, then runs the daemon
 * (src/provider/main.ts) until SIGTERM/SIGINT. `--check-config` validates and exits.
 */
export function registerProviderdCommand(program: Command): void {
  const providerd = program.command("providerd");
  registerReconcileCommand(providerd);
  providerd
    .description("The provider daemon: turns chain lease events into workloads on the configured backends")
    .requiredOption("-c, --config <file>", "providerd YAML configuration")
    .option("--check-config", "validate the configuration (file + PROVIDER_<KEY> overrides) and exit")
    .option(
      "--online",
      "with --check-config: also check the keyring, chain, provider record, SKUs, backends and stores",
    )
    .addHelpText(
      "after",
      `
Examples:
  $ fred providerd --check-config -c examples/providerd.yaml
  $ PROVIDER_LOG_LEVEL=debug fred providerd --check-config -c /etc/fred/providerd.yaml

--check-config prints {"ok":true,"config":{…secrets redacted…}} and exits 0, or prints
every problem (one per line on stderr, and {"ok":false,"problems":[…]} on stdout) and
exits 1. Keys and rules: docs/providerd-config.md.

--check-config --online then checks, each within 10 s, printing one "ok"/"FAIL" line per
check on stderr: the key unlocks (FRED_KEYRING_PASSPHRASE) and is provider_address; the
node at rpc_url serves chain_id; provider_uuid is on chain, active, and this key's; every
SKU in backends[].skus and billing_only_skus exists, is active and is this provider's; the
placement and payload stores open; every backend answers its signed /stats as the storage
the placement store pinned. stdout gets {"ok","config","online":{"ok","checks":[…]}};
exit 1 if any check failed.
  $ FRED_KEYRING_PASSPHRASE=… fred providerd --check-config --online -c /etc/fred/providerd.yaml

Running, it prints one line {"url","provider_uuid","operator_url"} on stdout once the API
listens (operator_url: the dashboard's listener, absent when operator_listen_addr is ""), then
logs to stderr. SIGHUP (systemctl reload) reloads tls_cert_file/tls_key_file and the operator
listener's operator_tls_* files (so does a change to any of them); nothing else is reloaded, other changes need a restart. SIGUSR1 runs a
reconciler sweep now (one already running is followed by exactly one more), as does
\`fred providerd reconcile -c <config>\`, which also prints the sweep's result. The placement store must exist (fred placement init). The file keyring
needs FRED_KEYRING_PASSPHRASE. Operator guide: docs/providerd.md.
  $ FRED_KEYRING_PASSPHRASE=… fred providerd -c /etc/fred/providerd.yaml`,
    )
    .action(async (opts: ProviderdOptions) => {
      const result = checkProviderConfig(await readConfigFile(opts.config), process.env);
      if (!result.ok) {
        say(`fred providerd: ${opts.config} has ${result.problems.length} problem(s):`);
        for (const p of result.problems) say(`  - ${p}`);
        printJson({ ok: false, problems: result.problems });
        throw new ExitCode(1);
      }
      if (opts.online && !opts.checkConfig)
        throw new FredError(
          "ERR_USAGE",
          "--online goes with --check-config (fred providerd --check-config --online -c <file>)",
        );
      if (opts.checkConfig) {
        say(`fred providerd: ${opts.config} is valid`);
        if (!opts.online) {
          printJson({ ok: true, config: redactConfig(result.config) });
          return;
        }
        const online = await runPreflight(result.config, {
          env: process.env,
          clock: commandClock,
          timeoutMs: PREFLIGHT_TIMEOUT_MS,
        });
        for (const line of preflightLines(online)) say(line);
        const failed = online.checks.filter((c) => !c.ok).length;
        say(
          failed === 0
            ? "fred providerd: every online check passed"
            : `fred providerd: ${failed} online check(s) failed`,
        );
        printJson({ ok: online.ok, config: redactConfig(result.config), online });
        if (!online.ok) throw new ExitCode(1);
        return;
      }
      // SIGHUP (`systemctl reload`): serve a renewed TLS certificate without a restart. Taken
      // from the start: by default SIGHUP ends the process, and systemd counts that as a clean
      // exit it does not restart. One that arrives during startup has nothing to do, since
      // startup reads the certificate files itself.
      let onHangup = () => {};
      process.on("SIGHUP", () => onHangup());
      // Before startup allocates: the daemon's heap growth follows its live set (heap-policy.ts).
      const heap = startHeapPolicy();
      const running = await startProviderd(result.config, { env: process.env, heap });
      heap?.settle();
      onHangup = () => {
        running.reloadTls();
      };
      say(`fred providerd: listening on ${running.url}`);
      printJson({
        url: running.url,
        provider_uuid: result.config.providerUuid,
        ...(running.operatorUrl === undefined ? {} : { operator_url: running.operatorUrl }),
      });
      // SIGUSR1: the operator's on-demand reconciler sweep (its outcome is logged and metered).
      process.on("SIGUSR1", () => void running.reconcile().catch(() => {}));
      await new Promise<void>((resolve) => {
        process.once("SIGTERM", resolve);
        process.once("SIGINT", resolve);
      });
      say("fred providerd: stopping");
      await running.stop();
      heap?.stop();
    });
}

/**
 * `fred providerd reconcile -c config.yaml`: asks the running daemon for a sweep over its
 * local control socket (providerd.sock beside placement_store_db_path, mode 0600) and
 * prints the sweep's report as JSON once it ends.
 */
function registerReconcileCommand(providerd: Command): void {
  providerd
    .command("reconcile")
    .description("Run a reconciler sweep in the running providerd now and print its result")
    .addHelpText(
      "after",
      `
-c/--config (the running providerd's YAML configuration) is required, as for providerd.
Talks to the daemon over the unix socket providerd.sock in the directory of
placement_store_db_path (created 0600: run it as the daemon's user). Prints
{"outcome":"complete"|"degraded"|"failed","answered":[backends],"actions":n} and exits 0
when the sweep was complete, 1 otherwise (a backend did not answer, or the chain listing
failed; the daemon's log says why). A sweep already running is followed by exactly one more.

Examples:
  $ fred providerd reconcile -c /etc/fred/providerd.yaml
  $ sudo -u fred fred providerd reconcile -c /etc/fred/providerd.yaml`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      // -c belongs to `providerd`, which parses it before this subcommand runs.
      const opts = cmd.optsWithGlobals<{ config: string }>();
      const result = checkProviderConfig(await readConfigFile(opts.config), process.env);
      if (!result.ok) {
        for (const p of result.problems) say(`  - ${p}`);
        throw new ExitCode(1);
      }
      const report = await requestSweep(controlSocketPath(result.config.stateDir));
      printJson(report);
      if (report.outcome !== "complete") throw new ExitCode(1);
    });
}
