import { Command, CommanderError } from "commander";
import { isFredError } from "../core/errors.ts";
import { versionText } from "../version.ts";
import { registerBackendCommands } from "./backend.ts";
import { registerChainCommands } from "./chain.ts";
import { registerRegistryCommands } from "./chain-registry.ts";
import { registerDevnetCommands } from "./devnet.ts";
import { registerKeysCommands } from "./keys.ts";
import { registerLeaseCommands } from "./lease/index.ts";
import { registerLoadtestCommand } from "./loadtest.ts";
import { registerManifestCommands } from "./manifest.ts";
import { ExitCode, say } from "./output.ts";
import { registerPlacementCommands } from "./placement.ts";
import { registerProviderCommands } from "./provider-init.ts";
import { registerProviderdCommand } from "./providerd.ts";
import { registerTokenCommands } from "./token.ts";
import { registerUpCommand } from "./up/command.ts";

export function buildProgram(): Command {
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
  registerUpCommand(program);
  registerTokenCommands(program);
  registerDevnetCommands(program);
  registerBackendCommands(program);
  registerManifestCommands(program);
  registerProviderdCommand(program);
  registerProviderCommands(program);
  registerPlacementCommands(program);
  registerKeysCommands(program);
  registerRegistryCommands(registerChainCommands(program));
  registerLeaseCommands(program);
  registerLoadtestCommand(program);
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
  const program = buildProgram();
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
