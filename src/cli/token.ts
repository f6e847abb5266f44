import { type Command, InvalidArgumentError } from "commander";
import { mintTenantToken, verifyTenantTokenUncached } from "../auth/token.ts";
import { FredError, isFredError } from "../core/errors.ts";
import { isCanonicalUuid } from "../core/uuid.ts";
import { privateKeyFrom } from "./chain.ts";
import { ExitCode, printJson, printText } from "./output.ts";

function unixSeconds(value: string): number {
  if (!/^\d{1,12}$/.test(value)) throw new InvalidArgumentError("expected Unix seconds");
  return Number(value);
}

interface MintOptions {
  keyHex?: string;
  mnemonic?: string;
  from?: string;
  home?: string;
  lease: string;
  metaHash?: string;
  timestamp?: number;
  prefix: string;
}

interface VerifyOptions {
  lease: string;
  prefix: string;
  now?: number;
}

export function registerTokenCommands(program: Command): void {
  const token = program.command("token").description("Mint and verify ADR-036 tenant tokens");

  token
    .command("mint")
    .description("Mint a tenant bearer token; prints only the base64 token on stdout")
    .option("--key-hex <hex>", "tenant secp256k1 private key, 64 hex characters")
    .option("--mnemonic <words>", "tenant BIP-39 mnemonic (derived at m/44'/118'/0'/0/0)")
    .option("--from <name>", "dev account name from `fred devnet keys` (needs --home)")
    .option("--home <dir>", "devnet home directory for --from")
    .requiredOption("--lease <uuid>", "lease UUID the token is for")
    .option("--meta-hash <hex>", "SHA-256 of the manifest (64 hex): mints a payload-upload token")
    .option("--timestamp <unix>", "token time in Unix seconds (default: now)", unixSeconds)
    .option("--prefix <hrp>", "bech32 address prefix", "manifest")
    .addHelpText(
      "after",
      `
Examples:
  $ fred token mint --key-hex 8f7f…1d95 --lease 0190f3a2-7c1e-7000-8000-000000000001
  $ TOKEN=$(fred token mint --mnemonic "$WORDS" --lease $LEASE)
  $ TOKEN=$(fred token mint --from tenant1 --home .fred/devnet --lease $LEASE)
  $ fred token mint --key-hex $KEY --lease $LEASE --meta-hash $(sha256sum manifest.json | cut -d' ' -f1)`,
    )
    .action((opts: MintOptions) => {
      if (!isCanonicalUuid(opts.lease))
        throw new FredError("ERR_USAGE", "--lease must be a canonical lowercase UUID");
      const privateKey = privateKeyFrom(opts);
      const input = {
        privateKey,
        leaseUuid: opts.lease,
        timestamp: opts.timestamp ?? Math.floor(Date.now() / 1000),
        prefix: opts.prefix,
        ...(opts.metaHash === undefined ? {} : { metaHash: opts.metaHash }),
      };
      printText(mintTenantToken(input));
    });

  token
    .command("verify")
    .description('Verify a tenant token; prints {"tenant","kind"} (exit 0) or {"error"} (exit 1)')
    .requiredOption("--lease <uuid>", "lease UUID the token must be for")
    .option("--prefix <hrp>", "bech32 address prefix", "manifest")
    .option("--now <unix>", "verify as if at this Unix time (default: now)", unixSeconds)
    .argument("<token>", "the base64 token")
    .addHelpText(
      "after",
      `
Examples:
  $ fred token verify --lease $LEASE "$TOKEN"
  $ fred token verify --lease 0190f3a2-7c1e-7000-8000-000000000001 --now 1735689600 eyJ0ZW5h…`,
    )
    .action((tokenText: string, opts: VerifyOptions) => {
      try {
        const nowMs = opts.now === undefined ? Date.now() : opts.now * 1000;
        const claims = verifyTenantTokenUncached(tokenText, {
          nowMs,
          prefix: opts.prefix,
          leaseUuid: opts.lease,
        });
        printJson({ tenant: claims.tenant, kind: claims.kind });
      } catch (err) {
        if (!isFredError(err)) throw err;
        printJson({ error: err.message });
        throw new ExitCode(1);
      }
    });
}
