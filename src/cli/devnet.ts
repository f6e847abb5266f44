import { join } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { parseDurationMs } from "../core/duration.ts";
import { FredError } from "../core/errors.ts";
import {
  COSMJS_FAUCET_PORT,
  DEFAULT_FAUCET_COOLDOWN_MS,
  DEFAULT_FAUCET_CREDITS_PER_MINUTE,
  faucetConfig,
  parseFaucetAmounts,
} from "../devnet/faucet/index.ts";
import { type GenesisChoices, parseAccountFlag } from "../devnet/genesis-options.ts";
import { DEVNET_CHAIN_ID, DEVNET_PWR_DENOM, pwrDenomOf, readKeys } from "../devnet/home.ts";
import { DEFAULT_MIN_GAS_PRICE, initDevnet, type RunningDevnet, startDevnet } from "../devnet/main.ts";
import { createLogger } from "../log.ts";
import { printJson, say } from "./output.ts";
import type { UpComponent } from "./up/component.ts";

function intArg(min: number, max: number) {
  return (value: string): number => {
    if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
    }
    return Number(value);
  };
}

/** A commander parser for a Go duration that may not be negative (`what` names it in the refusal). */
function durationArg(what: string, examples: string): (value: string) => number {
  return (value) => {
    let ms: number;
    try {
      ms = parseDurationMs(value);
    } catch {
      throw new InvalidArgumentError(`expected a Go duration such as ${examples}`);
    }
    if (ms < 0) throw new InvalidArgumentError(`${what} cannot be negative`);
    return ms;
  };
}

function faucetAmountArg(value: string): string {
  try {
    parseFaucetAmounts(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return value;
}

const FAUCET_FLAGS = ["faucetAmount", "faucetCooldown", "faucetRate"] as const;

interface InitOpts {
  home: string;
  tenants: number;
  profile: string;
  minGasPrice: string;
  account: string[];
  chainId?: string;
  pwrDenom?: string;
  authority?: string;
}

/**
 * The genesis choices among the init flags. Only flags given count: an initialised home
 * refuses a given value that differs from its genesis, and keeps its own for the rest.
 * `--account` is parsed here rather than by commander, whose error would echo the mnemonic.
 */
function genesisChoices(opts: InitOpts): GenesisChoices {
  return {
    ...(opts.account.length === 0 ? {} : { accounts: opts.account.map(parseAccountFlag) }),
    ...(opts.chainId === undefined ? {} : { chainId: opts.chainId }),
    ...(opts.pwrDenom === undefined ? {} : { pwrDenom: opts.pwrDenom }),
    ...(opts.authority === undefined ? {} : { authority: opts.authority }),
  };
}

interface StartOpts extends InitOpts {
  rpcPort: number;
  restPort?: number;
  blockTime: number;
  historyBlocks: number;
  faucetPort?: number;
  faucetAmount?: string;
  faucetCooldown: number;
  faucetRate: number;
}

export function registerDevnetCommands(program: Command): void {
  const devnet = program
    .command("devnet")
    .description(
      "Local single-validator chain (x/auth, x/bank and the Manifest modules) behind a CometBFT 0.38 RPC",
    );

  const withInitOptions = (cmd: Command) =>
    cmd
      .requiredOption("--home <dir>", "devnet home directory (keys, validator key, chain database)")
      .option("--tenants <n>", "number of tenant dev accounts (tenant1 … tenantN)", intArg(1, 100_000), 2)
      .option("--profile <name>", "genesis profile passed to the modules (e.g. bench)", "default")
      .option("--min-gas-price <price>", "minimum gas price CheckTx demands", DEFAULT_MIN_GAS_PRICE)
      .option(
        "--account <name=mnemonic>",
        "genesis: this account's mnemonic (m/44'/118'/0'/0/0); provider, tenantN or faucet replaces that dev account, another name adds a funded account; repeatable",
        (value: string, previous: string[]) => [...previous, value],
        [] as string[],
      )
      .option("--chain-id <id>", `genesis: the chain id (default ${DEVNET_CHAIN_ID})`)
      .option(
        "--pwr-denom <denom>",
        `genesis: denom of credit and SKU prices, e.g. factory/<admin address>/upwr (default ${DEVNET_PWR_DENOM})`,
      )
      .option(
        "--authority <address>",
        "genesis: x/sku and x/billing module authority (default: POA_ADMIN_ADDRESS at each start, else the gov module address)",
      );

  withInitOptions(devnet.command("init"))
    .description(
      "Create the dev accounts and genesis; idempotent (an initialised home keeps its keys, and refuses other genesis flags)",
    )
    .addHelpText(
      "after",
      '\nPrints {"home","chain_id","pwr_denom","authority","created","accounts"} on stdout.\n\nExamples:\n  $ fred devnet init --home .fred/devnet\n  $ fred devnet init --home /tmp/dn --tenants 5\n  $ fred devnet init --home /tmp/dn --chain-id manifest-local-1 --account provider="$PROVIDER_MNEMONIC" \\\n      --authority manifest1… --pwr-denom factory/manifest1…/upwr',
    )
    .action((opts: InitOpts) => {
      const { keys, created } = initDevnet({
        home: opts.home,
        tenants: opts.tenants,
        profile: opts.profile,
        minGasPrice: opts.minGasPrice,
        ...genesisChoices(opts),
      });
      if (!created) say(`devnet home ${opts.home} is already initialised; keeping its keys`);
      printJson({
        home: opts.home,
        chain_id: keys.chain_id,
        pwr_denom: pwrDenomOf(keys),
        authority: keys.authority ?? null,
        created,
        accounts: keys.accounts.map((a) => ({ name: a.name, address: a.address })),
      });
    });

  withInitOptions(devnet.command("start"))
    .description("Run the node (initialises the home if needed); SIGTERM or Ctrl-C stops it cleanly")
    .option("--rpc-port <port>", "RPC port on 127.0.0.1 (0 picks a free port)", intArg(0, 65535), 26657)
    .addOption(
      new Option("--block-time <duration>", "time between blocks; 0s = a block as soon as a tx arrives")
        .argParser(durationArg("the block time", "1s, 500ms or 0s"))
        .default(1000, "1s"),
    )
    .option("--history-blocks <n>", "keep only the last N blocks and their txs (0 = all)", intArg(0, 1e9), 0)
    .option(
      "--rest-port <port>",
      "also serve the Cosmos SDK REST (gRPC-gateway) API on 127.0.0.1 (0 picks a free port; off unless given)",
      intArg(0, 65535),
    )
    .option(
      "--faucet-port <port>",
      "serve the CosmJS faucet API (GET /status, POST /credit) on 127.0.0.1 (0 picks a free port; off unless given)",
      intArg(0, 65535),
    )
    .option(
      "--faucet-amount <coins>",
      "what one credit sends, per denom the faucet offers (comma-separated coins)",
      faucetAmountArg,
    )
    .addOption(
      new Option("--faucet-cooldown <duration>", "how long an address waits before the same denom again")
        .argParser(durationArg("the faucet cooldown", "24h, 90s or 0s"))
        .default(DEFAULT_FAUCET_COOLDOWN_MS, "24h"),
    )
    .option(
      "--faucet-rate <n>",
      "credits per minute the faucet grants over all addresses",
      intArg(1, 1_000_000),
      DEFAULT_FAUCET_CREDITS_PER_MINUTE,
    )
    .addHelpText(
      "after",
      '\nWhen ready, prints one line on stdout:\n  {"rpc":"http://127.0.0.1:<port>","chain_id":"fred-devnet-1","height":<n>}\nwith "rest":"http://127.0.0.1:<port>" added when --rest-port is given and\n"faucet":"http://127.0.0.1:<port>" when --faucet-port is given.\n\nExamples:\n  $ fred devnet start --home .fred/devnet\n  $ fred devnet start --home /tmp/dn --rpc-port 0 --block-time 0s\n  $ fred devnet start --home .fred/devnet --rest-port 1317\n  $ fred devnet start --home .fred/devnet --faucet-port 8000 --faucet-cooldown 1m\n  $ curl -H \'content-type: application/json\' -d \'{"address":"manifest1…","denom":"umfx"}\' http://127.0.0.1:8000/credit',
    )
    .action(async (opts: StartOpts, cmd: Command) => {
      if (opts.faucetPort === undefined) {
        const stray = FAUCET_FLAGS.find((f) => cmd.getOptionValueSource(f) === "cli");
        if (stray !== undefined)
          throw new FredError(
            "ERR_USAGE",
            `--${stray.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} needs --faucet-port`,
          );
      }
      const logger = createLogger("devnet");
      const running = await startDevnet({
        home: opts.home,
        tenants: opts.tenants,
        profile: opts.profile,
        minGasPrice: opts.minGasPrice,
        ...genesisChoices(opts),
        rpcPort: opts.rpcPort,
        blockTimeMs: opts.blockTime,
        historyBlocks: opts.historyBlocks,
        ...(opts.restPort === undefined ? {} : { rest: { port: opts.restPort } }),
        ...(opts.faucetPort === undefined
          ? {}
          : {
              faucet: {
                port: opts.faucetPort,
                config: faucetConfig({
                  ...(opts.faucetAmount === undefined ? {} : { amounts: opts.faucetAmount }),
                  cooldownMs: opts.faucetCooldown,
                  creditsPerMinute: opts.faucetRate,
                }),
              },
            }),
        logger,
      });
      printJson({
        rpc: running.url,
        ...(running.restUrl === undefined ? {} : { rest: running.restUrl }),
        chain_id: running.chainId,
        height: running.height(),
        ...(running.faucetUrl === undefined ? {} : { faucet: running.faucetUrl }),
      });
      logger.info({ rpc: running.url, home: opts.home }, "devnet started");
      await new Promise<void>((resolve) => {
        process.once("SIGTERM", resolve);
        process.once("SIGINT", resolve);
      });
      logger.info({ height: running.height() }, "devnet stopping");
      await running.stop();
    });

  devnet
    .command("keys")
    .description("Print the dev accounts, provider UUID and SKUs (works while the node runs)")
    .requiredOption("--home <dir>", "devnet home directory")
    .addHelpText(
      "after",
      '\nPrints {"chain_id","pwr_denom","provider_uuid","accounts":[{"name","address","mnemonic","private_key_hex"}],"skus":[…]}.\n\nExamples:\n  $ fred devnet keys --home .fred/devnet\n  $ fred devnet keys --home .fred/devnet | jq -r \'.accounts[] | select(.name=="tenant1") | .mnemonic\'',
    )
    .action((opts: { home: string }) => {
      const keys = readKeys(opts.home);
      if (!keys)
        throw new FredError("ERR_DEVNET_HOME", `no devnet keys in ${opts.home}; run fred devnet init first`);
      printJson({
        chain_id: keys.chain_id,
        pwr_denom: pwrDenomOf(keys),
        provider_uuid: keys.provider_uuid,
        accounts: keys.accounts,
        skus: keys.skus,
      });
    });
}

/**
 * The devnet inside `fred up`: runs in-process on <home>/devnet with 1s blocks, on port
 * 26657 when free (another free port otherwise), and publishes the RPC URL as fact "rpc";
 * its REST endpoint likewise on 1317 or a free port, as fact "rest_url";
 * its faucet listens on 8000 when free and is published as fact "faucet_url".
 */
export const devnetUpComponent: UpComponent = {
  name: "devnet",
  async start(ctx) {
    const home = join(ctx.home, "devnet");
    const logger = createLogger("devnet");
    // The faucet on the CosmJS faucet's usual port when free, on another one otherwise.
    const faucet = { port: COSMJS_FAUCET_PORT, anyPortIfBusy: true, config: faucetConfig({}) };
    // The REST (LCD) API on the SDK's usual 1317 when free, on another port otherwise.
    const rest = { port: 1317, anyPortIfBusy: true };
    const base = { home, blockTimeMs: 1000, rest, faucet, logger };
    let running: RunningDevnet;
    try {
      running = await startDevnet({ ...base, rpcPort: 26657 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
      running = await startDevnet({ ...base, rpcPort: 0 });
    }
    ctx.facts.set("rpc", running.url);
    if (running.restUrl !== undefined) ctx.facts.set("rest_url", running.restUrl);
    ctx.facts.set("chain_id", running.chainId);
    ctx.facts.set("devnet_home", home);
    if (running.faucetUrl !== undefined) ctx.facts.set("faucet_url", running.faucetUrl);
    return {
      summary: [
        `devnet      ${running.url}  (chain ${running.chainId}, 1s blocks)`,
        ...(running.restUrl === undefined
          ? []
          : [`REST        ${running.restUrl}  (Cosmos SDK REST/LCD API)`]),
        ...(running.faucetUrl === undefined
          ? []
          : [`faucet      ${running.faucetUrl}  (POST /credit {"address","denom"}, GET /status)`]),
        `            dev keys: fred devnet keys --home ${home}`,
      ],
      stop: () => running.stop(),
    };
  },
};
