import { Command, CommanderError } from "commander";
import { isFredError } from "../core/errors.ts";
import { versionText } from "../version.ts";
import { ExitCode, say } from "./output.ts";

type Register = (program: Command) => void;

/**
 * The top-level commands, in help order, each loaded only when it runs: a daemon then holds
 * its own modules and nothing of the others (the devnet's codecs, the lease tools, the load
 * test), which keeps providerd's resident memory down (#37). `fred --help`, `fred help …`
 * and an unknown command load them all.
 */
const COMMANDS: [name: string, load: () => Promise<Register>][] = [
  ["up", async () => (await import("./up/command.ts")).registerUpCommand],
  ["token", async () => (await import("./token.ts")).registerTokenCommands],
  ["devnet", async () => (await import("./devnet.ts")).registerDevnetCommands],
  ["backend", async () => (await import("./backend.ts")).registerBackendCommands],
  ["manifest", async () => (await import("./manifest.ts")).registerManifestCommands],
  ["providerd", async () => (await import("./providerd.ts")).registerProviderdCommand],
  ["provider", async () => (await import("./provider-init.ts")).registerProviderCommands],
  ["placement", async () => (await import("./placement.ts")).registerPlacementCommands],
  ["keys", async () => (await import("./keys.ts")).registerKeysCommands],
  [
    "chain",
    async () => {
      const [chain, registry] = await Promise.all([import("./chain.ts"), import("./chain-registry.ts")]);
      return (program) => registry.registerRegistryCommands(chain.registerChainCommands(program));
    },
  ],
  ["lease", async () => (await import("./lease/index.ts")).registerLeaseCommands],
  ["loadtest", async () => (await import("./loadtest.ts")).registerLoadtestCommand],
];

/**
 * The CLI with every command, or, given the command line, with only the command it names
 * (all of them when it names none we know, so help and "unknown command" stay complete).
 */
export async function buildProgram(argv?: string[]): Promise<Command> {
  const program = new Command("fred")
    .description("Provider daemon and tools for the Manifest Network compute marketplace.")
    .showHelpAfterError()
    .addHelpText(
      "after",
      `
Examples:
  $ fred up                                   # devnet, backend and providerd on loopback
  $ fred token mint --key-hex <hex> --lease <uuid>
  $ fred manifest validate manifest.json --items '[{"sku_uuid":"…","quantity":1}]'

Every command logs to stderr; stdout carries only its machine-readable output.`,
    );
  const named = argv?.slice(2).find((arg) => !arg.startsWith("-"));
  const wanted = COMMANDS.filter(([name]) => name === named);
  for (const [, load] of wanted.length === 1 ? wanted : COMMANDS) (await load())(program);
  addVersionOptions(program);
  return program;
}

/** The daemons an operator runs answer `--version` too (`fred --version` covers the rest). */
const DAEMONS = [["providerd"], ["up"], ["backend", "mock"], ["backend", "docker"], ["devnet", "start"]];

function addVersionOptions(program: Command): void {
  const text = versionText();
  const help = "print the fred version (and git commit when known) and exit";
  program.version(text, "--version", help);
  for (const path of DAEMONS) {
    let cmd: Command | undefined = program;
    for (const name of path) cmd = cmd?.commands.find((c) => c.name() === name);
    cmd?.version(text, "--version", help);
  }
}

/** Runs the CLI and returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = await buildProgram(argv);
  const override = (cmd: Command): void => {
    cmd.exitOverride();
    for (const sub of cmd.commands) override(sub);
  };
  override(program);
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof ExitCode) return err.code;
    if (err instanceof CommanderError) return err.exitCode;
    if (isFredError(err)) {
      say(`fred: ${err.message}`);
      return 1;
    }
    say(`fred: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  }
}
