// Over 500 lines: the `fred chain` command tree (credit, lease, leases): many small subcommands registered together.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { isAccountAddress } from "../auth/address.ts";
import { privateKeyFromHex, privateKeyFromMnemonic } from "../auth/keys.ts";
import { type CosmosChain, openCosmosChain } from "../chain/cosmos/adapter.ts";
import { type SignModeName, signerFromKey } from "../chain/cosmos/signer.ts";
import { Keyring } from "../chain/keyring/index.ts";
import { type ChainLease, LEASE_STATES, type LeaseOutcome, type LeaseStateName } from "../chain/port.ts";
import {
  MsgCancelLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgFundCredit,
  MsgFundCreditResponse,
  MsgSetItemCustomDomain,
} from "../chain/proto/index.ts";
import { commandClock } from "../core/clock.ts";
import { parseCoin } from "../core/coin.ts";
import { parseConfigDuration } from "../core/duration.ts";
import { FredError, isFredError } from "../core/errors.ts";
import { isValidCustomDomain } from "../core/lease-items.ts";
import { isCanonicalUuid } from "../core/uuid.ts";
import { readKeys } from "../devnet/home.ts";
import { ExitCode, printJson, say } from "./output.ts";

export interface ReadFlags {
  rpc: string;
}

export interface TxFlags extends ReadFlags {
  chainId?: string;
  keyHex?: string;
  mnemonic?: string;
  from?: string;
  home?: string;
  keyName?: string;
  keyringDir?: string;
  keyringBackend?: string;
  signMode?: string;
  txTimeout?: string;
}

const DEFAULT_RPC = "http://127.0.0.1:26657";

export function withRpc(cmd: Command): Command {
  return cmd.option("--rpc <url>", "CometBFT RPC URL of the node", DEFAULT_RPC);
}

export function withTx(cmd: Command): Command {
  return withRpc(cmd)
    .option("--chain-id <id>", "chain id (default: read from the node)")
    .option("--key-hex <hex>", "signing secp256k1 private key, 64 hex characters")
    .option("--mnemonic <words>", "signing BIP-39 mnemonic (m/44'/118'/0'/0/0)")
    .option("--from <name>", "dev account name from `fred devnet keys` (needs --home)")
    .option("--home <dir>", "devnet home directory for --from")
    .option("--key-name <name>", "key in a `fred keys` keyring (needs --keyring-dir)")
    .option("--keyring-dir <dir>", "keyring directory for --key-name")
    .option(
      "--keyring-backend <backend>",
      "keyring backend for --key-name: file (passphrase from FRED_KEYRING_PASSPHRASE) or test",
      "file",
    )
    .option(
      "--sign-mode <mode>",
      "direct (SIGN_MODE_DIRECT) or amino-json (SIGN_MODE_LEGACY_AMINO_JSON, as Keplr and Ledger sign)",
      "direct",
    )
    .option(
      "--tx-timeout <duration>",
      "how long to wait for the tx to be included in a block (Go duration, e.g. 90s)",
      "30s",
    );
}

/** The inclusion deadline of `--tx-timeout`, in milliseconds. */
export function txTimeoutFrom(flags: TxFlags): number {
  const parsed = parseConfigDuration(flags.txTimeout ?? "30s");
  if (!parsed.ok || parsed.ms <= 0)
    throw new FredError(
      "ERR_USAGE",
      `--tx-timeout must be a positive duration such as 30s or 2m, got ${JSON.stringify(flags.txTimeout)}`,
    );
  return parsed.ms;
}

export function signModeFrom(flags: TxFlags): SignModeName {
  const mode = flags.signMode ?? "direct";
  if (mode !== "direct" && mode !== "amino-json")
    throw new FredError("ERR_USAGE", `--sign-mode must be direct or amino-json, got ${JSON.stringify(mode)}`);
  return mode;
}

/** The signing key from the flags, a `fred keys` keyring included (which may need to decrypt). */
export async function resolvePrivateKey(flags: TxFlags): Promise<Uint8Array> {
  if (flags.keyName === undefined) return privateKeyFrom(flags);
  if ([flags.keyHex, flags.mnemonic, flags.from].some((v) => v !== undefined))
    throw new FredError("ERR_USAGE", KEY_CHOICE);
  if (flags.keyringDir === undefined)
    throw new FredError("ERR_USAGE", "--key-name needs --keyring-dir <dir>");
  const keyring = new Keyring({
    dir: flags.keyringDir,
    backend: flags.keyringBackend ?? "file",
    passphrase: process.env.FRED_KEYRING_PASSPHRASE,
  });
  return (await keyring.unlock(flags.keyName)).privateKey;
}

const KEY_CHOICE =
  "give exactly one key: --key-hex, --mnemonic, --from <name> --home <dir>, or --key-name <name> --keyring-dir <dir>";

/** The flags that name a signing key without a keyring (what `fred token mint` takes too). */
export type KeyFlags = Pick<TxFlags, "keyHex" | "mnemonic" | "from" | "home" | "keyName">;

export function privateKeyFrom(flags: KeyFlags): Uint8Array {
  const given = [flags.keyHex, flags.mnemonic, flags.from, flags.keyName].filter(
    (v) => v !== undefined,
  ).length;
  if (given !== 1 || flags.keyName !== undefined) throw new FredError("ERR_USAGE", KEY_CHOICE);
  if (flags.keyHex !== undefined) return privateKeyFromHex(flags.keyHex);
  if (flags.mnemonic !== undefined) return privateKeyFromMnemonic(flags.mnemonic);
  // `fred lease restore --from <source-uuid>` relies on this: no account name is a UUID.
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(flags.from ?? ""))
    throw new FredError(
      "ERR_USAGE",
      `--from ${flags.from} is a UUID, not a dev account name (account names are never UUIDs; only fred lease restore takes --from <source-uuid>, in lowercase)`,
    );
  if (flags.home === undefined) throw new FredError("ERR_USAGE", "--from needs --home <devnet home>");
  const keys = readKeys(flags.home);
  if (keys === undefined) throw new FredError("ERR_USAGE", `${flags.home} is not an initialised devnet home`);
  const account = keys.accounts.find((a) => a.name === flags.from);
  if (account === undefined)
    throw new FredError(
      "ERR_USAGE",
      `no dev account ${JSON.stringify(flags.from)} (have: ${keys.accounts.map((a) => a.name).join(", ")})`,
    );
  return privateKeyFromHex(account.private_key_hex);
}

export async function readClient(flags: ReadFlags): Promise<CosmosChain> {
  return openCosmosChain({ rpcUrl: flags.rpc });
}

export async function txClient(flags: TxFlags): Promise<CosmosChain> {
  const signer = signerFromKey(await resolvePrivateKey(flags), undefined, signModeFrom(flags));
  return openCosmosChain({
    rpcUrl: flags.rpc,
    ...(flags.chainId === undefined ? {} : { chainId: flags.chainId }),
    signer,
    txTimeoutMs: txTimeoutFrom(flags),
    clock: commandClock,
    onProgress: (line) => say(`fred: ${line}`),
    // A person's command must not pay a fee for a transaction the chain would fail.
    failedSimulation: "refuse",
  });
}

export async function using<T>(client: CosmosChain, fn: (c: CosmosChain) => Promise<T>): Promise<T> {
  try {
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

const iso = (d: Date | undefined) => d?.toISOString();

export function leaseView(l: ChainLease): Record<string, unknown> {
  const view: Record<string, unknown> = {
    uuid: l.uuid,
    tenant: l.tenant,
    provider_uuid: l.providerUuid,
    state: l.state,
    items: l.items.map((i) => ({
      sku_uuid: i.skuUuid,
      quantity: Number(i.quantity),
      ...(i.serviceName === "" ? {} : { service_name: i.serviceName }),
      ...(i.customDomain === "" ? {} : { custom_domain: i.customDomain }),
      locked_price: i.lockedPrice ?? null,
    })),
    meta_hash: l.metaHash,
    created_at: iso(l.createdAt),
  };
  const optional: Record<string, string | undefined> = {
    last_settled_at: iso(l.lastSettledAt),
    acknowledged_at: iso(l.acknowledgedAt),
    closed_at: iso(l.closedAt),
    rejected_at: iso(l.rejectedAt),
    expired_at: iso(l.expiredAt),
    rejection_reason: l.rejectionReason || undefined,
    closure_reason: l.closureReason || undefined,
  };
  for (const [k, v] of Object.entries(optional)) if (v !== undefined) view[k] = v;
  return view;
}

export function parseAmountFlag(text: string): { denom: string; amount: string } {
  const coin = parseCoin(text);
  if (coin === undefined || coin.amount === 0n)
    throw new FredError(
      "ERR_USAGE",
      `--amount must look like 1000000umfx (a positive integer and a denom), got ${JSON.stringify(text)}`,
    );
  return { amount: coin.amount.toString(), denom: coin.denom };
}

export interface SkuSpec {
  ref: string;
  quantity: bigint;
  serviceName: string;
}

export function parseSkuSpec(text: string): SkuSpec {
  const parts = text.split(":");
  if (parts.length > 3 || parts[0] === "")
    throw new FredError(
      "ERR_USAGE",
      `--sku must be <uuid|name>[:quantity[:service]], got ${JSON.stringify(text)}`,
    );
  const q = parts[1] ?? "1";
  if (!/^[1-9][0-9]{0,9}$/.test(q) || BigInt(q) > 1_000_000_000n)
    throw new FredError("ERR_USAGE", `SKU quantity must be 1..1000000000, got ${JSON.stringify(q)}`);
  const serviceName = parts[2] ?? "";
  if (serviceName !== "" && !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(serviceName))
    throw new FredError(
      "ERR_USAGE",
      `service name must be a DNS label (a-z, 0-9, '-'), got ${JSON.stringify(serviceName)}`,
    );
  return { ref: parts[0] as string, quantity: BigInt(q), serviceName };
}

/** Sends MsgCancelLease for one PENDING lease of the signing key (the tenant). */
export async function cancelLease(
  c: CosmosChain,
  uuid: string,
): Promise<{ tx_hash: string; height: number }> {
  const msg = MsgCancelLease.fromPartial({ tenant: c.address, leaseUuids: [uuid] });
  const res = await c.send([{ typeUrl: MsgCancelLease.typeUrl, value: msg }]);
  return { tx_hash: res.txHash, height: res.height };
}

const sha256 = (bytes: Uint8Array): Uint8Array => createHash("sha256").update(bytes).digest();

/** A create the chain refused for want of credit says how to add some. */
function withCreditHint(err: unknown, tenant: string): unknown {
  if (!isFredError(err, "ERR_TX_SIMULATION_REFUSED")) return err;
  if (!/insufficient credit|credit account not found/.test(err.message)) return err;
  return new FredError(
    err.code,
    `${err.message}; add credit first: fred chain credit fund --tenant ${tenant} --amount <coins> (from a funded key)`,
    { cause: err },
  );
}

/** Sends MsgCreateLease for the signing key (the tenant); the new lease's UUID and the tx. */
export async function createLease(
  c: CosmosChain,
  specs: readonly SkuSpec[],
  metaHash: Uint8Array,
): Promise<{ lease_uuid: string; tx_hash: string; height: number }> {
  const named = specs.filter((s) => s.serviceName !== "").length;
  if (named !== 0 && named !== specs.length)
    throw new FredError("ERR_USAGE", "give a service name for every --sku item or for none");
  const items = [];
  for (const s of specs)
    items.push({ skuUuid: await c.resolveSku(s.ref), quantity: s.quantity, serviceName: s.serviceName });
  const msg = MsgCreateLease.fromPartial({ tenant: c.address, items, metaHash });
  const res = await c.send([{ typeUrl: MsgCreateLease.typeUrl, value: msg }]).catch((err: unknown) => {
    throw withCreditHint(err, c.address);
  });
  const any = res.msgResponses[0];
  if (any?.typeUrl !== MsgCreateLeaseResponse.typeUrl)
    throw new FredError("ERR_CHAIN_TX", `create tx ${res.txHash} carried no MsgCreateLeaseResponse`);
  return {
    lease_uuid: MsgCreateLeaseResponse.decode(any.value).leaseUuid,
    tx_hash: res.txHash,
    height: res.height,
  };
}

export const STATE_FILTERS: Record<string, LeaseStateName> = Object.fromEntries(
  LEASE_STATES.filter((s) => s !== "LEASE_STATE_UNSPECIFIED").map((s) => [
    s.slice("LEASE_STATE_".length).toLowerCase(),
    s,
  ]),
);

export function leaseArg(uuid: string): string {
  if (!isCanonicalUuid(uuid))
    throw new FredError("ERR_USAGE", "lease UUID must be a canonical lowercase UUID");
  return uuid;
}

function reportOutcome(outcome: LeaseOutcome | undefined): void {
  if (outcome === undefined) throw new FredError("ERR_CHAIN_TX", "no outcome");
  if (outcome.status === "failed") {
    printJson({
      lease_uuid: outcome.leaseUuid,
      status: outcome.status,
      error: outcome.error?.message ?? "failed",
    });
    throw new ExitCode(1);
  }
  printJson({
    lease_uuid: outcome.leaseUuid,
    status: outcome.status,
    tx_hash: outcome.txHash ?? null,
    height: outcome.height ?? null,
  });
}

/** The `fred chain` tree; returns it so the registry commands (chain-registry.ts) join it. */
export function registerChainCommands(program: Command): Command {
  const chain = program
    .command("chain")
    .description(
      "Chain-side tools for tenants and operators: fund credit, create/show/cancel/close leases, list leases, SKUs and providers",
    );

  const credit = chain.command("credit").description("Tenant credit accounts");
  withTx(
    credit.command("fund").description("Fund a tenant's credit account (MsgFundCredit) from the signing key"),
  )
    .requiredOption("--tenant <addr>", "tenant address to credit")
    .requiredOption("--amount <coin>", "amount and denom, e.g. 1000000umfx")
    .addHelpText(
      "after",
      `
Prints {"tenant","credit_address","new_balance","tx_hash","height"}.

Examples:
  $ fred chain credit fund --tenant manifest1… --amount 1000000umfx --from faucet --home .fred/devnet
  $ fred chain credit fund --tenant manifest1… --amount 5000000upwr --key-hex $KEY --rpc http://node:26657`,
    )
    .action(async (opts: TxFlags & { tenant: string; amount: string }) => {
      if (!isAccountAddress(opts.tenant))
        throw new FredError("ERR_USAGE", "--tenant must be a manifest1… account address");
      const amount = parseAmountFlag(opts.amount);
      await using(await txClient(opts), async (c) => {
        const msg = MsgFundCredit.fromPartial({ sender: c.address, tenant: opts.tenant, amount });
        const res = await c.send([{ typeUrl: MsgFundCredit.typeUrl, value: msg }]);
        const any = res.msgResponses[0];
        const decoded =
          any?.typeUrl === MsgFundCreditResponse.typeUrl
            ? MsgFundCreditResponse.decode(any.value)
            : undefined;
        printJson({
          tenant: opts.tenant,
          credit_address: decoded?.creditAddress ?? null,
          new_balance: decoded?.newBalance ?? null,
          tx_hash: res.txHash,
          height: res.height,
        });
      });
    });

  const lease = chain.command("lease").description("Create, inspect, cancel and close leases");

  withTx(lease.command("create").description("Create a lease for the signing key (the tenant)"))
    .requiredOption(
      "--sku <spec...>",
      "item as <uuid|name>[:quantity[:service]]; repeat for several items (quantity defaults to 1)",
    )
    .option("--manifest <file>", "manifest file; its SHA-256 becomes the lease's meta_hash")
    .addHelpText(
      "after",
      `
Prints {"lease_uuid","tx_hash","height"}.

Examples:
  $ fred chain lease create --sku docker-small --from tenant1 --home .fred/devnet
  $ fred chain lease create --sku docker-small:1:web --sku docker-medium:2:db --manifest stack.json --from tenant1 --home .fred/devnet
  $ fred chain lease create --sku 01a2…-…:1 --mnemonic "$WORDS" --rpc http://node:26657`,
    )
    .action(async (opts: TxFlags & { sku: string[]; manifest?: string }) => {
      const specs = opts.sku.map(parseSkuSpec);
      const metaHash = opts.manifest === undefined ? new Uint8Array() : sha256(await readFile(opts.manifest));
      await using(await txClient(opts), async (c) => printJson(await createLease(c, specs, metaHash)));
    });

  withRpc(lease.command("show").description("Show a lease as JSON").argument("<uuid>", "lease UUID"))
    .addHelpText(
      "after",
      `
Prints {"uuid","tenant","provider_uuid","state":"LEASE_STATE_…","items":[…],"meta_hash","created_at",…}
(timestamps RFC 3339; fields that are unset are left out). Exit 1 with {"error"} when there is no such lease.

Examples:
  $ fred chain lease show 01a2…-…
  $ fred chain lease show $LEASE --rpc http://node:26657`,
    )
    .action(async (uuid: string, opts: ReadFlags) => {
      leaseArg(uuid);
      await using(await readClient(opts), async (c) => {
        const l = await c.getLease(uuid);
        if (l === undefined) {
          printJson({ error: `lease ${uuid} not found` });
          throw new ExitCode(1);
        }
        printJson(leaseView(l));
      });
    });

  withTx(
    lease
      .command("close")
      .description("Close an ACTIVE lease (tenant, provider or authority key)")
      .argument("<uuid>", "lease UUID"),
  )
    .option("--reason <text>", "closure reason (≤ 256 bytes; control characters are removed)", "")
    .addHelpText(
      "after",
      `
Prints {"lease_uuid","status","tx_hash","height"}; status "already_done" when it was already closed.

Examples:
  $ fred chain lease close $LEASE --from tenant1 --home .fred/devnet
  $ fred chain lease close $LEASE --reason "moving out" --key-hex $KEY`,
    )
    .action(async (uuid: string, opts: TxFlags & { reason: string }) => {
      leaseArg(uuid);
      await using(await txClient(opts), async (c) =>
        reportOutcome((await c.closeLeases([uuid], opts.reason))[0]),
      );
    });

  withTx(
    lease
      .command("cancel")
      .description("Cancel a PENDING lease (tenant key)")
      .argument("<uuid>", "lease UUID"),
  )
    .addHelpText(
      "after",
      `
Prints {"lease_uuid","status":"cancelled","tx_hash","height"}.

Examples:
  $ fred chain lease cancel $LEASE --from tenant1 --home .fred/devnet`,
    )
    .action(async (uuid: string, opts: TxFlags) => {
      leaseArg(uuid);
      await using(await txClient(opts), async (c) => {
        printJson({ lease_uuid: uuid, status: "cancelled", ...(await cancelLease(c, uuid)) });
      });
    });

  withTx(
    lease
      .command("set-domain")
      .description("Set or clear a lease item's custom domain (MsgSetItemCustomDomain; tenant key)")
      .argument("<uuid>", "lease UUID"),
  )
    .option("--service <name>", "the item's service name (omit for a single unnamed item)", "")
    .option("--domain <fqdn>", "the domain, lowercase (e.g. shop.example.com)")
    .option("--clear", "remove the item's custom domain")
    .addHelpText(
      "after",
      `
Prints {"lease_uuid","service","custom_domain","tx_hash","height"} (custom_domain "" after --clear).
The provider routes the domain once its DNS points at the provider's ingress.

Examples:
  $ fred chain lease set-domain $LEASE --service web --domain shop.example.com --from tenant1 --home .fred/devnet
  $ fred chain lease set-domain $LEASE --service web --clear --from tenant1 --home .fred/devnet`,
    )
    .action(async (uuid: string, opts: TxFlags & { service: string; domain?: string; clear?: boolean }) => {
      leaseArg(uuid);
      if ((opts.domain === undefined) === (opts.clear !== true))
        throw new FredError("ERR_USAGE", "give exactly one of --domain <fqdn> or --clear");
      const domain = opts.clear ? "" : (opts.domain as string);
      if (domain !== "" && !isValidCustomDomain(domain))
        throw new FredError(
          "ERR_USAGE",
          `--domain ${JSON.stringify(domain)} is not a lowercase fully qualified domain name`,
        );
      await using(await txClient(opts), async (c) => {
        const msg = MsgSetItemCustomDomain.fromPartial({
          sender: c.address,
          leaseUuid: uuid,
          serviceName: opts.service,
          customDomain: domain,
        });
        const res = await c.send([{ typeUrl: MsgSetItemCustomDomain.typeUrl, value: msg }]);
        printJson({
          lease_uuid: uuid,
          service: opts.service,
          custom_domain: domain,
          tx_hash: res.txHash,
          height: res.height,
        });
      });
    });

  withRpc(chain.command("leases").description("List a provider's leases (every page) as a JSON array"))
    .requiredOption("--provider <uuid>", "provider UUID")
    .option("--state <state>", `only leases in this state: ${Object.keys(STATE_FILTERS).join("|")}`)
    .addHelpText(
      "after",
      `
Examples:
  $ fred chain leases --provider 01a2…-…
  $ fred chain leases --provider $PROVIDER --state pending`,
    )
    .action(async (opts: ReadFlags & { provider: string; state?: string }) => {
      if (!isCanonicalUuid(opts.provider))
        throw new FredError("ERR_USAGE", "--provider must be a canonical lowercase UUID");
      let state: LeaseStateName | undefined;
      if (opts.state !== undefined) {
        state = STATE_FILTERS[opts.state.toLowerCase()];
        if (state === undefined)
          throw new FredError("ERR_USAGE", `--state must be one of ${Object.keys(STATE_FILTERS).join(", ")}`);
      }
      await using(await readClient(opts), async (c) => {
        printJson((await c.leasesByProvider(opts.provider, state)).map(leaseView));
      });
    });
  return chain;
}
