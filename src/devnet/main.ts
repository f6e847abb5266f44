/**
 * Composition root of the devnet: `initDevnet` (keys, validator, genesis; idempotent, and
 * refusing genesis choices that differ from an initialised home's) and
 * `startDevnet` (lock the home, open the database, run the node and its RPC server).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type Database from "better-sqlite3";
import { ReleaseStack } from "../core/async/index.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import { FredError } from "../core/errors.ts";
import type { Logger } from "../log.ts";
import { moduleAddress } from "./address.ts";
import { DevnetApp } from "./app.ts";
import { blockQueries } from "./block-queries.ts";
import { type FaucetConfig, startFaucet } from "./faucet/index.ts";
import { parseGasPrice } from "./gas-price.ts";
import { isGenesisDone, runGenesis } from "./genesis.ts";
import {
  type ChosenAccount,
  type GenesisChoices,
  refuseChangedGenesis,
  validateChoices,
} from "./genesis-options.ts";
import {
  DEVNET_CHAIN_ID,
  DEVNET_DENOM,
  DEVNET_PREFIX,
  DEVNET_PWR_DENOM,
  devAccountNames,
  homePaths,
  type KeyAccount,
  type KeysFile,
  keyAccountFromMnemonic,
  loadValidator,
  newKeyAccount,
  pwrDenomOf,
  readKeys,
  writeKeys,
} from "./home.ts";
import { moduleFactories } from "./modules/index.ts";
import { DevnetNode } from "./node.ts";
import { nodeQueries } from "./node-queries.ts";
import { startRestServer } from "./rest/server.ts";
import { startRpcServer } from "./rpc/server.ts";
import { openChainDb } from "./store/db.ts";

/** Accepts providerd's fee formula, fee = ceil(gas × 25 / 1e6) umfx. */
export const DEFAULT_MIN_GAS_PRICE = "0.000025umfx";

export interface InitOptions extends GenesisChoices {
  home: string;
  tenants?: number;
  profile?: string;
  minGasPrice?: string;
  clock?: Clock;
}

/** What the app is built with; fixed at genesis and read back from keys.json afterwards. */
interface GenesisFacts {
  chainId: string;
  pwrDenom: string;
  /** Chosen at init; undefined: POA_ADMIN_ADDRESS, else the gov module, at each start. */
  authority: string | undefined;
}

function buildApp(
  db: Database.Database,
  facts: GenesisFacts,
  minGasPrice: string,
  logger?: Logger,
): DevnetApp {
  const fromEnv = process.env.POA_ADMIN_ADDRESS;
  if (facts.authority !== undefined && fromEnv !== undefined && fromEnv !== facts.authority) {
    logger?.warn(
      { authority: facts.authority, POA_ADMIN_ADDRESS: fromEnv },
      "POA_ADMIN_ADDRESS is ignored: this home's genesis chose its authority with --authority",
    );
  }
  return new DevnetApp(
    db,
    {
      chainId: facts.chainId,
      bech32Prefix: DEVNET_PREFIX,
      bondDenom: DEVNET_DENOM,
      pwrDenom: facts.pwrDenom,
      authority: facts.authority ?? fromEnv ?? moduleAddress("gov", DEVNET_PREFIX),
      minGasPrice: parseGasPrice(minGasPrice),
      onInternalError: (err, where) =>
        logger?.error({ err, where }, "module handler failed with a non-chain error"),
    },
    moduleFactories,
  );
}

/** Checks every option before the home is touched: bad input changes nothing. */
function validateInitOptions(opts: InitOptions): void {
  const tenants = opts.tenants ?? 2;
  if (!Number.isInteger(tenants) || tenants < 1 || tenants > 100_000) {
    throw new FredError("ERR_DEVNET_CONFIG", "--tenants must be an integer from 1 to 100000");
  }
  validateChoices(opts, DEVNET_PREFIX, DEVNET_DENOM);
}

/**
 * The dev accounts of a new genesis: provider, tenant1…N and faucet (from the keys file
 * when one was put in the home), each from its chosen mnemonic when one was given, then
 * the chosen names that are none of those, as extra funded accounts.
 */
function genesisAccounts(
  tenants: number,
  chosen: readonly ChosenAccount[],
  existing?: KeysFile,
): KeyAccount[] {
  const mnemonicOf = new Map(chosen.map((a) => [a.name, a.mnemonic]));
  const base = existing?.accounts ?? devAccountNames(tenants).map(newKeyAccount);
  const accounts = base.map((a) => {
    const mnemonic = mnemonicOf.get(a.name);
    return mnemonic === undefined ? a : keyAccountFromMnemonic(a.name, mnemonic);
  });
  for (const a of chosen)
    if (!accounts.some((x) => x.name === a.name)) accounts.push(keyAccountFromMnemonic(a.name, a.mnemonic));
  const byAddress = new Map<string, string>();
  for (const a of accounts) {
    const other = byAddress.get(a.address);
    if (other !== undefined) {
      throw new FredError(
        "ERR_DEVNET_CONFIG",
        `accounts ${other} and ${a.name} have the same mnemonic (${a.address}); give each account its own`,
      );
    }
    byAddress.set(a.address, a.name);
  }
  return accounts;
}

/**
 * Opens the app on a home: an initialised one with the facts it recorded (refusing
 * different choices), a new one with the choices or the defaults, running genesis.
 */
function openApp(
  db: Database.Database,
  opts: InitOptions,
  logger?: Logger,
): { app: DevnetApp; keys: KeysFile; created: boolean } {
  const minGasPrice = opts.minGasPrice ?? DEFAULT_MIN_GAS_PRICE;
  const existing = readKeys(opts.home);
  if (existing && isGenesisDone(db)) {
    const facts = {
      chainId: existing.chain_id,
      pwrDenom: pwrDenomOf(existing),
      authority: existing.authority,
    };
    refuseChangedGenesis(opts.home, existing, facts, opts);
    return { app: buildApp(db, facts, minGasPrice, logger), keys: existing, created: false };
  }
  const facts: GenesisFacts = {
    chainId: opts.chainId ?? existing?.chain_id ?? DEVNET_CHAIN_ID,
    pwrDenom: opts.pwrDenom ?? existing?.pwr_denom ?? DEVNET_PWR_DENOM,
    authority: opts.authority ?? existing?.authority,
  };
  const accounts = genesisAccounts(opts.tenants ?? 2, opts.accounts ?? [], existing);
  const app = buildApp(db, facts, minGasPrice, logger);
  const info = runGenesis({
    db,
    app,
    validator: loadValidator(opts.home),
    accounts,
    profile: opts.profile ?? "default",
    genesisTimeMs: (opts.clock ?? systemClock).now(),
  });
  const keys: KeysFile = {
    chain_id: facts.chainId,
    pwr_denom: facts.pwrDenom,
    ...(facts.authority === undefined ? {} : { authority: facts.authority }),
    provider_uuid: info.provider_uuid,
    accounts,
    skus: info.skus,
  };
  writeKeys(opts.home, keys);
  return { app, keys, created: true };
}

/** `fred devnet init`: idempotent; an initialised home is left as it is. */
export function initDevnet(opts: InitOptions): { keys: KeysFile; created: boolean } {
  validateInitOptions(opts);
  const lock = acquireLock(opts.home);
  try {
    const db = openChainDb(homePaths(opts.home).db);
    try {
      const { keys, created } = openApp(db, opts);
      return { keys, created };
    } finally {
      db.close();
    }
  } finally {
    lock.release();
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** One node per home: a pid file, taken over when its owner is gone (e.g. after kill -9). */
function acquireLock(home: string): { release(): void } {
  mkdirSync(home, { recursive: true });
  const path = homePaths(home).lock;
  if (existsSync(path)) {
    const pid = Number(readFileSync(path, "utf8").trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && pidAlive(pid)) {
      throw new FredError("ERR_DEVNET_LOCKED", `devnet home ${home} is in use by process ${pid}`);
    }
  }
  writeFileSync(path, `${process.pid}\n`);
  return {
    release() {
      try {
        if (readFileSync(path, "utf8").trim() === String(process.pid)) rmSync(path);
      } catch {
        // Already gone: nothing to release.
      }
    },
  };
}

export interface StartOptions extends InitOptions {
  rpcPort: number;
  blockTimeMs: number;
  historyBlocks?: number;
  /**
   * Serve the REST (gRPC-gateway JSON) API on this port of 127.0.0.1 (0 = a free one) when
   * given; `anyPortIfBusy` takes a free port when it is taken (`fred up`).
   */
  rest?: { port: number; anyPortIfBusy?: boolean };
  /** Serve the faucet API on this port (0 = a free one) when given. */
  faucet?: { port: number; anyPortIfBusy?: boolean; config: FaucetConfig };
  logger: Logger;
}

export interface RunningDevnet {
  url: string;
  /** The REST endpoint's URL when restPort was given. */
  restUrl?: string;
  chainId: string;
  /** The faucet's base URL when it runs. */
  faucetUrl?: string;
  node: DevnetNode;
  height(): number;
  stop(): Promise<void>;
}

export async function startDevnet(opts: StartOptions): Promise<RunningDevnet> {
  const releases = new ReleaseStack((err, resource) =>
    opts.logger.warn({ err, resource }, "releasing a devnet resource failed"),
  );
  validateInitOptions(opts);
  const lock = acquireLock(opts.home);
  releases.defer("home lock", () => lock.release());
  try {
    const db = openChainDb(homePaths(opts.home).db);
    releases.defer("chain database", () => db.close());
    const { app, keys } = openApp(db, opts, opts.logger);
    const node = new DevnetNode({
      db,
      app,
      validator: loadValidator(opts.home),
      clock: opts.clock ?? systemClock,
      blockTimeMs: opts.blockTimeMs,
      historyBlocks: opts.historyBlocks ?? 0,
      logger: opts.logger,
    });
    let rpcAddress = "";
    app.registerQueries(nodeQueries(node, () => rpcAddress));
    app.registerQueries(blockQueries(node, DEVNET_PREFIX));
    // Listen first: a busy port must fail before any block is produced.
    const accounts = keys.accounts.map((a) => ({ name: a.name, address: a.address }));
    const server = await startRpcServer({ node, logger: opts.logger, port: opts.rpcPort, accounts });
    releases.defer("RPC server", () => server.app.close());
    rpcAddress = server.url.replace(/^http/, "tcp");
    const rest = opts.rest === undefined ? undefined : await startRest(node, opts.logger, opts.rest);
    if (rest) releases.defer("REST server", () => rest.app.close());
    let faucetUrl: string | undefined;
    if (opts.faucet !== undefined) {
      const faucet = await startFaucet({
        node,
        accounts: keys.accounts,
        config: opts.faucet.config,
        pwrDenom: app.config.pwrDenom,
        nodeUrl: server.url,
        port: opts.faucet.port,
        anyPortIfBusy: opts.faucet.anyPortIfBusy === true,
        logger: opts.logger,
        ...(opts.clock === undefined ? {} : { clock: opts.clock }),
      });
      releases.defer("faucet server", () => faucet.close());
      faucetUrl = faucet.url;
    }
    node.start();
    releases.defer("block production", () => node.stop());
    return {
      url: server.url,
      ...(rest ? { restUrl: rest.url } : {}),
      chainId: node.chainId,
      ...(faucetUrl === undefined ? {} : { faucetUrl }),
      node,
      height: () => node.height,
      stop: () => releases.close(),
    };
  } catch (err) {
    await releases.close().catch(() => {});
    throw err;
  }
}

async function startRest(node: DevnetNode, logger: Logger, rest: { port: number; anyPortIfBusy?: boolean }) {
  try {
    return await startRestServer({ node, logger, port: rest.port });
  } catch (err) {
    if (rest.anyPortIfBusy !== true || (err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
    return startRestServer({ node, logger, port: 0 });
  }
}
