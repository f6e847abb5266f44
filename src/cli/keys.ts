import type { Command } from "commander";
import { type KeyInfo, Keyring } from "../chain/keyring/index.ts";
import { FredError } from "../core/errors.ts";
import { printJson, say } from "./output.ts";

interface KeyringFlags {
  keyringDir: string;
  keyringBackend: string;
  prefix: string;
}

function openKeyring(flags: KeyringFlags): Keyring {
  if (flags.keyringDir === "") throw new FredError("ERR_USAGE", "--keyring-dir must not be empty");
  return new Keyring({
    dir: flags.keyringDir,
    backend: flags.keyringBackend,
    passphrase: process.env.FRED_KEYRING_PASSPHRASE,
    prefix: flags.prefix,
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > 4096) throw new FredError("ERR_USAGE", "a mnemonic on stdin must be under 4 KiB");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8").trim();
}

function view(info: KeyInfo): { name: string; address: string; pubkey: string } {
  return { name: info.name, address: info.address, pubkey: Buffer.from(info.pubkey).toString("base64") };
}

function keyringOptions(cmd: Command): Command {
  return cmd
    .requiredOption("--keyring-dir <dir>", "directory holding the keyring (keys go under keyring-<backend>/)")
    .option(
      "--keyring-backend <backend>",
      "test (plaintext) or file (encrypted; FRED_KEYRING_PASSPHRASE)",
      "file",
    )
    .option("--prefix <hrp>", "bech32 address prefix", "manifest");
}

export function registerKeysCommands(program: Command): void {
  const keys = program
    .command("keys")
    .description("Manage the provider's signing keys (our own keyring format, see docs/keyring.md)");

  keyringOptions(
    keys
      .command("add")
      .description(
        "Add a key, recovered from --mnemonic or freshly generated (the new mnemonic is printed once)",
      )
      .argument("<name>", "key name: letters, digits, '.', '_' or '-'")
      .option(
        "--mnemonic <words>",
        "BIP-39 mnemonic to recover (derived at m/44'/118'/0'/0/0); '-' reads it from stdin (keeps it out of ps)",
      ),
  )
    .addHelpText(
      "after",
      `
Prints {"name","address","pubkey"} (pubkey = base64 compressed secp256k1), plus "mnemonic" when a new
one was generated: store it offline, it is never shown again.

Examples:
  $ fred keys add provider --keyring-dir ~/.fred/keys --keyring-backend test
  $ FRED_KEYRING_PASSPHRASE=… fred keys add provider --keyring-dir /etc/fred/keys --keyring-backend file \\
      --mnemonic "word1 word2 … word24"
  $ fred keys add provider --keyring-dir /etc/fred/keys --mnemonic - < mnemonic.txt`,
    )
    .action(async (name: string, opts: KeyringFlags & { mnemonic?: string }) => {
      const ring = openKeyring(opts);
      const mnemonic = opts.mnemonic === "-" ? await readStdin() : opts.mnemonic;
      const added = await ring.add(name, mnemonic);
      if (added.generated) {
        say(
          "fred: a new mnemonic was generated; it is printed once on stdout - write it down and keep it secret",
        );
        printJson({ ...view(added.info), mnemonic: added.mnemonic });
      } else {
        printJson(view(added.info));
      }
    });

  keyringOptions(
    keys.command("show").description("Show a key's address and public key").argument("<name>", "key name"),
  )
    .addHelpText(
      "after",
      `
Examples:
  $ fred keys show provider --keyring-dir ~/.fred/keys --keyring-backend test
  $ fred keys show provider --keyring-dir /etc/fred/keys        # file backend by default`,
    )
    .action(async (name: string, opts: KeyringFlags) => {
      printJson(view(await openKeyring(opts).show(name)));
    });

  keyringOptions(keys.command("list").description("List keys as a JSON array of {name,address,pubkey}"))
    .addHelpText(
      "after",
      `
Examples:
  $ fred keys list --keyring-dir ~/.fred/keys --keyring-backend test`,
    )
    .action(async (opts: KeyringFlags) => {
      printJson((await openKeyring(opts).list()).map(view));
    });
}
