/**
 * InitChain: the genesis document and the initial state (dev accounts, chosen or generated,
 * funded with umfx, then every module's genesis hook, which price and credit in the chain's
 * PWR denom), written in one SQLite transaction at height 0.
 */
import type Database from "better-sqlite3";
import type { Metadata } from "cosmjs-types/cosmos/bank/v1beta1/bank";
import type { DevnetApp } from "./app.ts";
import { CONSENSUS_PARAMS, rfc3339, type Validator } from "./blocks.ts";
import { coin } from "./coins.ts";
import type { KeyAccount } from "./home.ts";
import type { KeysInfo } from "./module.ts";
import { BANK, type BankKeeper } from "./modules/bank/types.ts";
import { MetaTable } from "./store/db.ts";

/** umfx each dev account starts with: 1,000,000 MFX; the faucet holds 1,000× that. */
export const DEV_ACCOUNT_FUNDS = 1_000_000_000_000n;
export const FAUCET_FUNDS = 1_000_000_000_000_000n;

/**
 * Bank metadata in the shape the Manifest chain's genesis gives its two denoms: the base
 * unit and a display unit of 10^6 named by the symbol, so wallets and explorers show MFX
 * and PWR. The PWR units alias each other, as token factory metadata does there.
 */
export function feeDenomMetadata(base: string): Metadata {
  return {
    description: "MFX",
    denomUnits: [
      { denom: base, exponent: 0, aliases: [] },
      { denom: "MFX", exponent: 6, aliases: [] },
    ],
    base,
    display: "MFX",
    name: "MFX",
    symbol: "MFX",
    uri: "",
    uriHash: "",
  };
}

export function pwrDenomMetadata(base: string): Metadata {
  return {
    description: "PWR",
    denomUnits: [
      { denom: base, exponent: 0, aliases: ["PWR"] },
      { denom: "PWR", exponent: 6, aliases: [base] },
    ],
    base,
    display: "PWR",
    name: "POWER",
    symbol: "PWR",
    uri: "",
    uriHash: "",
  };
}

export function isGenesisDone(db: Database.Database): boolean {
  return new MetaTable(db).get("genesis") !== undefined;
}

export function runGenesis(opts: {
  db: Database.Database;
  app: DevnetApp;
  validator: Validator;
  accounts: KeyAccount[];
  profile: string;
  genesisTimeMs: number;
}): KeysInfo {
  const { db, app, validator, accounts } = opts;
  const cfg = app.config;
  const keys: KeysInfo = { provider_uuid: "", skus: [] };
  const bank = app.modules.find((m) => m.name === BANK)?.keeper as BankKeeper;
  const funds = (name: string) => (name === "faucet" ? FAUCET_FUNDS : DEV_ACCOUNT_FUNDS);
  const genesis = {
    genesis_time: rfc3339(opts.genesisTimeMs),
    chain_id: cfg.chainId,
    initial_height: "1",
    consensus_params: CONSENSUS_PARAMS,
    validators: [
      {
        address: validator.address,
        pub_key: { type: "tendermint/PubKeyEd25519", value: validator.pubKeyBase64 },
        power: "10",
        name: "fred-devnet-validator",
      },
    ],
    app_hash: "",
    app_state: {
      accounts: accounts.map((a) => ({ name: a.name, address: a.address })),
      balances: accounts.map((a) => ({ address: a.address, coins: [coin(funds(a.name), cfg.bondDenom)] })),
      pwr_denom: cfg.pwrDenom,
      authority: cfg.authority,
      profile: opts.profile,
    },
  };
  db.transaction(() => {
    app.initGenesis(
      { chainId: cfg.chainId, height: 0, timeMs: opts.genesisTimeMs, hash: new Uint8Array(32) },
      accounts.map((a) => ({ name: a.name, address: a.address })),
      opts.profile,
      keys,
      (ctx) => {
        for (const a of accounts) bank.mintCoins(ctx, a.address, [coin(funds(a.name), cfg.bondDenom)]);
        bank.setDenomMetadata(ctx, feeDenomMetadata(cfg.bondDenom));
        bank.setDenomMetadata(ctx, pwrDenomMetadata(cfg.pwrDenom));
      },
    );
    const meta = new MetaTable(db);
    meta.set("genesis", JSON.stringify(genesis));
    meta.set("height", "0");
    meta.set("last_time_ms", String(opts.genesisTimeMs));
    meta.set("app_hash", "");
  })();
  return keys;
}
