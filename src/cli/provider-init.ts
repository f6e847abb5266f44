/**
 * `fred provider init`: a new provider's guided setup. With the operator's key it
 * registers what the chain lacks (the provider record, then its SKUs; x/sku takes both
 * only from its module authority or an address on its allowed list), then writes a
 * providerd config, a Docker-backend config and their shared HMAC secret, and prints
 * the start order. `--skip-register` sends nothing: the provider and SKUs must already
 * be on chain (registered by the authority), and only the files are written.
 */
import { join } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { isAccountAddress } from "../auth/address.ts";
import type { CosmosChain } from "../chain/cosmos/adapter.ts";
import {
  MsgCreateProvider,
  MsgCreateProviderResponse,
  MsgCreateSKU,
  MsgCreateSKUResponse,
  Unit,
} from "../chain/proto/index.ts";
import { parseCoin } from "../core/coin.ts";
import { FredError } from "../core/errors.ts";
import { isUnixAddress, parseUnixAddress } from "../core/unix-address.ts";
import { isCanonicalUuid } from "../core/uuid.ts";
import { type TxFlags, txClient, using, withTx } from "./chain.ts";
import { printJson, say } from "./output.ts";
import {
  existingInitFiles,
  type HostCapacity,
  INIT_FILES,
  type InitPlan,
  localCapacity,
  newHmacSecret,
  refuseOverwrite,
  renderBackendConfig,
  renderProviderdConfig,
  type SkuProfile,
  skusExceeding,
  writeInitFiles,
} from "./provider-init-files.ts";

export interface SkuDef {
  name: string;
  price: { denom: string; amount: string };
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
}

const SKU_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const SKU_FORMAT =
  "<name>:<price per hour>:<cpu cores>:<memory MB>[:<disk MB>], e.g. docker-small:360000upwr:0.5:512";

/** `--sku docker-small:360000upwr:0.5:512[:1024]`: what tenants lease, and what it runs as. */
export function parseSkuDef(text: string): SkuDef {
  const parts = text.split(":");
  const bad = (why: string) =>
    new FredError("ERR_USAGE", `--sku ${JSON.stringify(text)}: ${why} (${SKU_FORMAT})`);
  if (parts.length < 4 || parts.length > 5) throw bad("wrong number of fields");
  const [name, priceText, cpuText, memText, diskText = "0"] = parts as [
    string,
    string,
    string,
    string,
    string?,
  ];
  if (!SKU_NAME.test(name)) throw bad("the name must be lowercase letters, digits and '-'");
  const coin = parseCoin(priceText);
  if (coin === undefined || coin.amount === 0n) throw bad("the price must be a positive amount with a denom");
  // x/sku keeps a per-second rate, so an hourly price must divide by 3600.
  if (coin.amount % 3600n !== 0n) throw bad("the hourly price must be divisible by 3600");
  const cpuCores = Number(cpuText);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(cpuText) || cpuCores <= 0) throw bad("cpu cores must be a positive number");
  if (!/^[1-9][0-9]*$/.test(memText)) throw bad("memory MB must be a positive integer");
  if (!/^[0-9]+$/.test(diskText)) throw bad("disk MB must be a whole number");
  return {
    name,
    price: { denom: coin.denom, amount: coin.amount.toString() },
    cpuCores,
    memoryMb: Number(memText),
    diskMb: Number(diskText),
  };
}

interface InitFlags extends TxFlags {
  out: string;
  sku: string[];
  providerUuid?: string;
  apiUrl?: string;
  payoutAddress?: string;
  skipRegister?: boolean;
  asAuthority?: boolean;
  backendUrl: string;
  callbackBaseUrl: string;
  hostAddress: string;
  stateDir: string;
  hostCpuCores?: number;
  hostMemoryMb?: number;
  hostDiskMb?: number;
}

const WHO_MAY =
  "x/sku accepts MsgCreateProvider and MsgCreateSKU only from its module authority or an address on its params.allowed_list";
const WAY_AROUND =
  "Ask the chain's authority to register them, then re-run with --skip-register --provider-uuid <uuid>";

/**
 * Before a registration tx: the key must be on x/sku's allowed list, or the operator says
 * it is the module authority (which no query reveals). Refusing here spares the fee of a
 * transaction the chain would reject.
 */
async function checkMayRegister(c: CosmosChain, opts: InitFlags, what: string): Promise<void> {
  if (opts.asAuthority) return;
  const allowed = await c.skuAllowedList();
  if (allowed.some((a) => a.toLowerCase() === c.address)) return;
  throw new FredError(
    "ERR_USAGE",
    `${c.address} may not ${what}: ${WHO_MAY} (allowed_list: ${allowed.join(", ") || "empty"}); if this key is the module authority, add --as-authority. ${WAY_AROUND}`,
  );
}

/** The chain refused the registration all the same (e.g. --as-authority with another key). */
function refusedByChain(address: string, what: string, err: unknown): FredError {
  return new FredError(
    "ERR_USAGE",
    `${address} may not ${what}: ${WHO_MAY} (the chain said: ${(err as Error).message}). ${WAY_AROUND}`,
  );
}

const unauthorized = (err: unknown) =>
  err instanceof Error && /unauthori[sz]ed|not the module authority/i.test(err.message);

/** The provider to configure: the given record (the key's own), or a new one. */
async function ensureProvider(c: CosmosChain, opts: InitFlags): Promise<{ uuid: string; created: boolean }> {
  if (opts.providerUuid !== undefined) {
    const record = await c.providerRecord(opts.providerUuid);
    if (record === undefined)
      throw new FredError(
        "ERR_USAGE",
        `no provider ${opts.providerUuid} on ${c.chainId} (fred chain provider show)`,
      );
    if (record.address !== c.address)
      throw new FredError(
        "ERR_USAGE",
        `provider ${opts.providerUuid} belongs to ${record.address}, not the signing key ${c.address}`,
      );
    return { uuid: opts.providerUuid, created: false };
  }
  await checkMayRegister(c, opts, "register a provider");
  const msg = MsgCreateProvider.fromPartial({
    authority: c.address,
    address: c.address,
    payoutAddress: opts.payoutAddress ?? c.address,
    apiUrl: opts.apiUrl ?? "",
  });
  let res: Awaited<ReturnType<CosmosChain["send"]>>;
  try {
    res = await c.send([{ typeUrl: MsgCreateProvider.typeUrl, value: msg }]);
  } catch (err) {
    if (unauthorized(err)) throw refusedByChain(c.address, "register a provider", err);
    throw err;
  }
  const any = res.msgResponses[0];
  if (any?.typeUrl !== MsgCreateProviderResponse.typeUrl)
    throw new FredError("ERR_CHAIN_TX", `tx ${res.txHash} carried no MsgCreateProviderResponse`);
  return { uuid: MsgCreateProviderResponse.decode(any.value).uuid, created: true };
}

/** Each --sku's UUID: the provider's active SKU of that name, or a new one (one tx for all). */
async function ensureSkus(
  c: CosmosChain,
  opts: InitFlags,
  providerUuid: string,
  defs: readonly SkuDef[],
): Promise<{ profiles: SkuProfile[]; created: string[] }> {
  const register = opts.skipRegister !== true;
  const existing = new Map((await c.skus({ activeOnly: true, providerUuid })).map((s) => [s.name, s.uuid]));
  const missing = defs.filter((d) => !existing.has(d.name));
  if (missing.length > 0 && !register)
    throw new FredError(
      "ERR_USAGE",
      `provider ${providerUuid} has no active SKU named ${missing.map((d) => d.name).join(", ")}: register them (without --skip-register, as the authority) or drop those --sku flags`,
    );
  if (missing.length > 0) {
    await checkMayRegister(c, opts, "register SKUs");
    const msgs = missing.map((d) => ({
      typeUrl: MsgCreateSKU.typeUrl,
      value: MsgCreateSKU.fromPartial({
        authority: c.address,
        providerUuid,
        name: d.name,
        unit: Unit.UNIT_PER_HOUR,
        basePrice: d.price,
      }),
    }));
    let res: Awaited<ReturnType<CosmosChain["send"]>>;
    try {
      res = await c.send(msgs);
    } catch (err) {
      if (unauthorized(err)) throw refusedByChain(c.address, "register SKUs", err);
      throw err;
    }
    missing.forEach((d, i) => {
      const any = res.msgResponses[i];
      if (any?.typeUrl !== MsgCreateSKUResponse.typeUrl)
        throw new FredError("ERR_CHAIN_TX", `tx ${res.txHash} carried no MsgCreateSKUResponse for ${d.name}`);
      existing.set(d.name, MsgCreateSKUResponse.decode(any.value).uuid);
    });
  }
  return {
    profiles: defs.map((d) => ({
      name: d.name,
      uuid: existing.get(d.name) as string,
      cpuCores: d.cpuCores,
      memoryMb: d.memoryMb,
      diskMb: d.diskMb,
    })),
    created: missing.map((d) => d.name),
  };
}

function positive(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(value) || !(n > 0))
    throw new InvalidArgumentError("expected a number above 0");
  return n;
}

function positiveInteger(value: string): number {
  if (!/^[1-9][0-9]{0,9}$/.test(value)) throw new InvalidArgumentError("expected a whole number above 0");
  return Number(value);
}

/** The host's totals: each flag given, else this machine's figure. */
function hostCapacity(opts: InitFlags): HostCapacity {
  const local = localCapacity(join(opts.stateDir, "volumes"));
  return {
    cpuCores: opts.hostCpuCores ?? local.cpuCores,
    memoryMb: opts.hostMemoryMb ?? local.memoryMb,
    diskMb: opts.hostDiskMb ?? local.diskMb,
  };
}

function describeCapacity(c: HostCapacity): string {
  return `${c.cpuCores} cores, ${c.memoryMb} MB memory, ${c.diskMb} MB disk`;
}

function checkFlags(opts: InitFlags): SkuDef[] {
  const defs = opts.sku.map(parseSkuDef);
  const names = defs.map((d) => d.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) throw new FredError("ERR_USAGE", `--sku ${twice} is given twice`);
  if (opts.providerUuid !== undefined && !isCanonicalUuid(opts.providerUuid))
    throw new FredError("ERR_USAGE", "--provider-uuid must be a canonical lowercase UUID");
  if (opts.skipRegister && opts.providerUuid === undefined)
    throw new FredError(
      "ERR_USAGE",
      "--skip-register needs --provider-uuid <uuid> (the record the authority registered)",
    );
  if (
    opts.providerUuid === undefined &&
    opts.apiUrl !== undefined &&
    !/^https:\/\/[^/?#@\s]+/.test(opts.apiUrl)
  )
    throw new FredError("ERR_USAGE", "--api-url must be an https:// URL (the chain accepts no other)");
  if (opts.payoutAddress !== undefined && !isAccountAddress(opts.payoutAddress))
    throw new FredError("ERR_USAGE", "--payout-address must be a manifest1… account address");
  if (isUnixAddress(opts.backendUrl)) {
    const unix = parseUnixAddress(opts.backendUrl);
    if (!unix.ok) throw new FredError("ERR_USAGE", `--backend-url ${unix.problem}`);
  } else if (!/^https?:\/\/[^/?#@\s]+:[0-9]+\/?$/.test(opts.backendUrl))
    throw new FredError(
      "ERR_USAGE",
      "--backend-url must be http(s)://host:port, e.g. http://127.0.0.1:9001, or unix:/absolute/socket/path",
    );
  if (!/^https?:\/\/[^/?#@\s]+(:[0-9]+)?\/?$/.test(opts.callbackBaseUrl))
    throw new FredError(
      "ERR_USAGE",
      "--callback-base-url must be http(s)://host[:port], e.g. http://10.0.0.2:8080 (providerd listens on its port)",
    );
  const taken = existingInitFiles(opts.out);
  if (taken.length > 0) throw refuseOverwrite(taken);
  return defs;
}

export function registerProviderCommands(program: Command): void {
  const provider = program
    .command("provider")
    .description("Set up a provider: chain records and configuration files");
  withTx(
    provider.command("init").description("Register a provider and its SKUs, and write its configuration"),
  )
    .requiredOption(
      "--out <dir>",
      `directory for ${Object.values(INIT_FILES).join(", ")} (existing files are refused)`,
    )
    .requiredOption("--sku <spec...>", `a SKU to serve: ${SKU_FORMAT}; repeat for several`)
    .option("--provider-uuid <uuid>", "use this provider record (the signing key's) instead of creating one")
    .option("--api-url <url>", "new provider record's api_url: providerd's public https:// URL")
    .option("--payout-address <addr>", "new provider record's payout address (default: the signing key)")
    .option(
      "--skip-register",
      "send nothing: the provider (--provider-uuid) and SKUs must be on chain already",
    )
    .option("--as-authority", "the signing key is x/sku's module authority (it is not on the allowed list)")
    .option(
      "--backend-url <url>",
      "where providerd reaches the Docker backend: http(s)://host:port, or unix:/path for a socket on this host",
      "http://127.0.0.1:9001",
    )
    .option(
      "--callback-base-url <url>",
      "providerd's API as the backend reaches it (providerd listens on its port)",
      "http://127.0.0.1:8080",
    )
    .option("--host-address <host>", "what tenants connect to on the Docker host", "127.0.0.1")
    .option("--state-dir <dir>", "where the stores, the backend journal and volumes live", "/var/lib/fred")
    .option(
      "--host-cpu-cores <n>",
      "cores the Docker host gives tenants in all (default: this machine's)",
      positive,
    )
    .option(
      "--host-memory-mb <n>",
      "memory the Docker host gives tenants in all (default: this machine's less a tenth, at least 1 GiB)",
      positiveInteger,
    )
    .option(
      "--host-disk-mb <n>",
      "volume space the Docker host gives tenants in all (default: free space at <state-dir>/volumes less a tenth)",
      positiveInteger,
    )
    .addHelpText(
      "after",
      `
Registers what is missing (MsgCreateProvider unless --provider-uuid; MsgCreateSKU for each
--sku the provider has no active SKU of that name, priced per hour), then writes providerd.yaml,
docker-backend.yaml and backend-hmac.secret (0600; both configs hold the secret) and prints
the start order on stderr. stdout: {"provider_uuid","provider_address","chain_id",
"registered":{"provider","skus"},"skus":[{"name","uuid"}],"files":[…]}.

x/sku takes these messages only from its module authority or an address on its allowed
list. A key not on the list is refused before any tx or file (the authority itself is not
queryable: --as-authority says the key is it). Then have the authority register
the provider and SKUs, and run again with --skip-register --provider-uuid <uuid>.

The providerd config names the key as --key-name/--keyring-dir when they are given, else
"provider" in <state-dir>/keyring (add it there with fred keys add).

Examples:
  $ fred provider init --out ./fred-config --sku docker-xl:2880000upwr:2:4096:10240 --from provider --home .fred/devnet --provider-uuid $PROVIDER
  $ fred provider init --out /etc/fred --api-url https://fred.example.com --sku docker-small:360000umfx:0.5:512 --key-name provider --keyring-dir /var/lib/fred/keyring --rpc https://node:26657
  $ fred provider init --out /etc/fred --skip-register --provider-uuid $PROVIDER --sku docker-small:360000umfx:0.5:512 --key-hex $KEY`,
    )
    .action(async (opts: InitFlags) => {
      const defs = checkFlags(opts);
      await using(await txClient(opts), async (c) => {
        const provider = await ensureProvider(c, opts);
        const skus = await ensureSkus(c, opts, provider.uuid, defs);
        const plan: InitPlan = {
          providerUuid: provider.uuid,
          providerAddress: c.address,
          chainId: c.chainId,
          rpcUrl: opts.rpc,
          keyringDir: opts.keyringDir ?? `${opts.stateDir}/keyring`,
          keyringBackend: opts.keyringBackend ?? "file",
          keyName: opts.keyName ?? "provider",
          stateDir: opts.stateDir,
          backendUrl: opts.backendUrl.replace(/\/$/, ""),
          callbackBaseUrl: opts.callbackBaseUrl,
          hostAddress: opts.hostAddress,
          skus: skus.profiles,
          capacity: hostCapacity(opts),
        };
        const tooBig = skusExceeding(plan.capacity, plan.skus);
        if (tooBig.length > 0)
          say(
            `fred provider: warning: SKU ${tooBig.join(", ")} is larger than the whole host (${describeCapacity(plan.capacity)}); the backend will refuse every lease of it`,
          );
        const secret = newHmacSecret();
        const files = await writeInitFiles(opts.out, {
          [INIT_FILES.secret]: `${secret}\n`,
          [INIT_FILES.backend]: renderBackendConfig(plan, secret),
          [INIT_FILES.providerd]: renderProviderdConfig(plan, secret),
        });
        const [secretFile, backendFile, providerdFile] = files;
        say(
          `fred provider: provider ${provider.uuid}${provider.created ? " registered" : ""}; wrote ${files.join(", ")}`,
        );
        say("Start in this order:");
        say(`  1. the backend (once: --initialize-storage-identity new; then as fred-backend-docker):`);
        say(`     fred backend docker -c ${backendFile} --initialize-storage-identity new`);
        say(`     fred backend docker -c ${backendFile}`);
        say(`  2. once, with the backend running: fred placement init --config ${providerdFile}`);
        say(`  3. providerd (as fred-providerd): fred providerd --check-config --online -c ${providerdFile}`);
        say(`     fred providerd -c ${providerdFile}`);
        say(`The HMAC secret is also in ${secretFile} (for DOCKER_BACKEND_CALLBACK_SECRET, rotation).`);
        printJson({
          provider_uuid: provider.uuid,
          provider_address: c.address,
          chain_id: c.chainId,
          registered: { provider: provider.created, skus: skus.created },
          skus: skus.profiles.map((s) => ({ name: s.name, uuid: s.uuid })),
          files,
        });
      });
    });
}
