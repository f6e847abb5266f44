/**
 * Composition root of the devnet: `initDevnet` (keys, validator, genesis; idempotent) and
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
  DEVNET_CHAIN_ID,
  DEVNET_DENOM,
  DEVNET_PREFIX,
  devAccountNames,
  homePaths,
  type KeysFile,
  loadValidator,
  newKeyAccount,
  readKeys,
  writeKeys,
} from "./home.ts";
import { moduleFactories } from "./modules/index.ts";
import { DEVNET_PRICE_DENOM } from "./modules/sku/genesis.ts";
import { DevnetNode } from "./node.ts";
import { nodeQueries } from "./node-queries.ts";
import { startRestServer } from "./rest/server.ts";
import { startRpcServer } from "./rpc/server.ts";
import { openChainDb } from "./store/db.ts";

/** Accepts providerd's fee formula, fee = ceil(gas × 25 / 1e6) umfx. */
export const DEFAULT_MIN_GAS_PRICE = "0.000025umfx";

export interface InitOptions {
  home: string;
  tenants?: number;
  profile?: string;
  minGasPrice?: string;
  clock?: Clock;
}

function buildApp(db: Database.Database, minGasPrice: string, logger?: Logger): DevnetApp {
  return new DevnetApp(
    db,
    {
      chainId: DEVNET_CHAIN_ID,
      bech32Prefix: DEVNET_PREFIX,
      bondDenom: DEVNET_DENOM,
      authority: process.env.POA_ADMIN_ADDRESS ?? moduleAddress("gov", DEVNET_PREFIX),
      minGasPrice: parseGasPrice(minGasPrice),
      onInternalError: (err, where) =>
        logger?.error({ err, where }, "module handler failed with a non-chain error"),
    },
    moduleFactories,
  );
}

/** Keys + genesis in an open database; returns the keys file and whether anything was created. */
function ensureGenesis(
  db: Database.Database,
  app: DevnetApp,
  opts: InitOptions,
): { keys: KeysFile; created: boolean } {
  const tenants = opts.tenants ?? 2;
  if (!Number.isInteger(tenants) || tenants < 1 || tenants > 100_000) {
    throw new FredError("ERR_DEVNET_CONFIG", "--tenants must be an integer from 1 to 100000");
  }
  const existing = readKeys(opts.home);
  if (existing && isGenesisDone(db)) return { keys: existing, created: false };
  const accounts = existing?.accounts ?? devAccountNames(tenants).map(newKeyAccount);
  const validator = loadValidator(opts.home);
  const info = runGenesis({
    db,
    app,
    validator,
    accounts,
    profile: opts.profile ?? "default",
    genesisTimeMs: (opts.clock ?? systemClock).now(),
  });
  const keys: KeysFile = {
    chain_id: DEVNET_CHAIN_ID,
    provider_uuid: info.provider_uuid,
    accounts,
    skus: info.skus,
  };
  writeKeys(opts.home, keys);
  return { keys, created: true };
}

/** `fred devnet init`: idempotent; an initialised home is left as it is. */
export function initDevnet(opts: InitOptions): { keys: KeysFile; created: boolean } {
  const lock = acquireLock(opts.home);
  try {
    const db = openChainDb(homePaths(opts.home).db);
    try {
      return ensureGenesis(db, buildApp(db, opts.minGasPrice ?? DEFAULT_MIN_GAS_PRICE), opts);
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
  const lock = acquireLock(opts.home);
  releases.defer("home lock", () => lock.release());
  try {
    const db = openChainDb(homePaths(opts.home).db);
    releases.defer("chain database", () => db.close());
    const app = buildApp(db, opts.minGasPrice ?? DEFAULT_MIN_GAS_PRICE, opts.logger);
    const { keys } = ensureGenesis(db, app, opts);
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
        pwrDenom: DEVNET_PRICE_DENOM,
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
