import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import type { CosmosChain } from "../../chain/cosmos/adapter.ts";
import { parseConfigDuration } from "../../core/duration.ts";
import { FredError } from "../../core/errors.ts";
import { readClient, resolvePrivateKey, type TxFlags, withTx } from "../chain.ts";
import { say } from "../output.ts";
import { TenantApi } from "./tenant-api.ts";
import { OUTPUT_HELP } from "./view.ts";

/**
 * What every `fred lease` command shares: the tenant's key flags (as `fred chain`), where
 * the provider answers, and the manifest file. The provider's URL is `--provider-url`,
 * else `FRED_PROVIDER_URL`, else the `api_url` of the lease's provider on chain, else the
 * local `fred up` default, so a tenant normally names nothing but the lease.
 */
export interface LeaseFlags extends TxFlags {
  providerUrl?: string;
  /** text | json; see view.ts (default by whether stdout is a terminal). */
  output?: string;
  caFile?: string;
  prefix: string;
}

/** Where `fred up` keeps its local CA, beside the devnet home: <up home>/tls/ca.pem. */
export const UP_TLS_DIR = "tls";

export const LOCAL_PROVIDER_URL = "http://127.0.0.1:8080";

export function withLeaseFlags(cmd: Command): Command {
  return withTx(cmd)
    .option(
      "--provider-url <url>",
      "providerd's tenant API (default: the provider's api_url on chain, else fred up's)",
    )
    .option(
      "--ca-file <pem>",
      "also trust this CA for the provider's https (default: fred up's local CA when --home is its devnet)",
    )
    .option("--prefix <hrp>", "bech32 address prefix of the tenant's account", "manifest")
    .option("--output <mode>", OUTPUT_HELP);
}

/**
 * The extra CA the provider's certificate may chain to: `--ca-file`, else the local CA of
 * the fred up home that `--home` (its devnet) belongs to. Verification always stays on;
 * NODE_EXTRA_CA_CERTS works as in every Node program.
 */
export function trustedCa(flags: Pick<LeaseFlags, "caFile" | "home">): string | undefined {
  if (flags.caFile !== undefined) {
    try {
      return readFileSync(flags.caFile, "utf8");
    } catch (err) {
      throw new FredError(
        "ERR_USAGE",
        `cannot read --ca-file ${flags.caFile}: ${(err as NodeJS.ErrnoException).code ?? err}`,
      );
    }
  }
  if (flags.home === undefined) return undefined;
  const local = join(dirname(resolve(flags.home)), UP_TLS_DIR, "ca.pem");
  return existsSync(local) ? readFileSync(local, "utf8") : undefined;
}

/** A tenant API client at `url` for the flags' key, trusting the flags' CA. */
export async function tenantApi(flags: LeaseFlags, url: string, key?: Uint8Array): Promise<TenantApi> {
  return new TenantApi(url, key ?? (await resolvePrivateKey(flags)), flags.prefix, trustedCa(flags));
}

/** The provider URL for a lease whose provider is `providerUuid` (when known). */
export async function providerUrl(
  flags: LeaseFlags,
  chain?: CosmosChain,
  providerUuid?: string,
): Promise<string> {
  const given = flags.providerUrl ?? process.env.FRED_PROVIDER_URL;
  if (given !== undefined && given !== "") return checkedUrl(given, "--provider-url");
  if (chain !== undefined && providerUuid !== undefined) {
    const record = await chain.providerRecord(providerUuid).catch(() => undefined);
    if (record !== undefined && record.apiUrl !== "")
      return checkedUrl(record.apiUrl, "the provider's api_url");
  }
  return LOCAL_PROVIDER_URL;
}

function checkedUrl(text: string, what: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new FredError("ERR_USAGE", `${what} is not a URL: ${JSON.stringify(text)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new FredError("ERR_USAGE", `${what} must be an http or https URL, got ${JSON.stringify(text)}`);
  return url.toString();
}

/** A tenant API client for one lease, resolving its provider from the chain when needed. */
export async function apiForLease(flags: LeaseFlags, uuid: string): Promise<TenantApi> {
  const key = await resolvePrivateKey(flags);
  if (flags.providerUrl !== undefined || process.env.FRED_PROVIDER_URL)
    return tenantApi(flags, await providerUrl(flags), key);
  const chain = await readClient(flags);
  try {
    const lease = await chain.getLease(uuid);
    if (lease === undefined) throw new FredError("ERR_USAGE", `the chain has no lease ${uuid}`);
    return tenantApi(flags, await providerUrl(flags, chain, lease.providerUuid), key);
  } finally {
    chain.disconnect();
  }
}

export async function readManifest(path: string): Promise<{ bytes: Buffer; metaHash: string }> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw new FredError(
      "ERR_USAGE",
      `cannot read manifest ${path}: ${(err as NodeJS.ErrnoException).code ?? err}`,
    );
  }
  if (bytes.length === 0) throw new FredError("ERR_USAGE", `manifest ${path} is empty`);
  return { bytes, metaHash: createHash("sha256").update(bytes).digest("hex") };
}

export function timeoutMs(text: string): number {
  const parsed = parseConfigDuration(text);
  if (!parsed.ok || parsed.ms <= 0)
    throw new FredError(
      "ERR_USAGE",
      `--timeout must be a positive duration such as 5m, got ${JSON.stringify(text)}`,
    );
  return parsed.ms;
}

/** One line for people on stderr, prefixed like every other fred message. */
export const progress = (line: string) => say(`fred: ${line}`);
