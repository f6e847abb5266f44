import { Metadata } from "cosmjs-types/cosmos/bank/v1beta1/bank";
import type { Coin } from "cosmjs-types/cosmos/base/v1beta1/coin";
import { amountOf, coin, coinsToString, isValidDenom } from "../../coins.ts";
import { sdkErrors } from "../../errors.ts";
import type { ExecContext, KVStore, QueryContext } from "../../module.ts";
import type { AuthKeeper } from "../auth/types.ts";
import { BANK, type BankKeeper } from "./types.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export const balanceKey = (address: string, denom: string) => `bal/${address}/${denom}`;
export const SUPPLY_PREFIX = "supply/";
/** Denom metadata by base denom (bank's DenomMetadata table). */
export const METADATA_PREFIX = "meta/";
const supplyKey = (denom: string) => `${SUPPLY_PREFIX}${denom}`;

function readAmount(store: KVStore, key: string): bigint {
  const raw = store.get(key);
  return raw === undefined ? 0n : BigInt(decoder.decode(raw));
}

function writeAmount(store: KVStore, key: string, value: bigint): void {
  if (value === 0n) store.delete(key);
  else store.set(key, encoder.encode(value.toString()));
}

/** Balances, supply and transfers with the SDK v0.50 events. */
export function createBankKeeper(auth: AuthKeeper): BankKeeper {
  const getBalance = (ctx: ExecContext | QueryContext, address: string, denom: string) =>
    readAmount(ctx.store(BANK), balanceKey(address, denom));

  function subtract(ctx: ExecContext, address: string, amount: Coin[]): void {
    const store = ctx.store(BANK);
    for (const c of amount) {
      const want = amountOf(c);
      const have = readAmount(store, balanceKey(address, c.denom));
      if (have < want) {
        throw sdkErrors.insufficientFunds.wrap(
          `spendable balance ${have}${c.denom} is smaller than ${want}${c.denom}`,
        );
      }
      writeAmount(store, balanceKey(address, c.denom), have - want);
    }
    ctx.emit({
      type: "coin_spent",
      attributes: [
        { key: "spender", value: address },
        { key: "amount", value: coinsToString(amount) },
      ],
    });
  }

  function add(ctx: ExecContext, address: string, amount: Coin[]): void {
    const store = ctx.store(BANK);
    for (const c of amount) {
      const key = balanceKey(address, c.denom);
      writeAmount(store, key, readAmount(store, key) + amountOf(c));
    }
    ctx.emit({
      type: "coin_received",
      attributes: [
        { key: "receiver", value: address },
        { key: "amount", value: coinsToString(amount) },
      ],
    });
  }

  return {
    getBalance,
    getAllBalances(ctx, address) {
      const prefix = `bal/${address}/`;
      const out: Coin[] = [];
      for (const [key, raw] of ctx.store(BANK).iterate({ prefix })) {
        out.push(coin(decoder.decode(raw), key.slice(prefix.length)));
      }
      return out;
    },
    sendCoins(ctx, from, to, amount) {
      subtract(ctx, from, amount);
      add(ctx, to, amount);
      // The recipient account comes into existence with its first coins, as in the SDK.
      auth.ensureAccount(ctx, to);
      ctx.emit({
        type: "transfer",
        attributes: [
          { key: "recipient", value: to },
          { key: "sender", value: from },
          { key: "amount", value: coinsToString(amount) },
        ],
      });
      ctx.emit({ type: "message", attributes: [{ key: "sender", value: from }] });
    },
    mintCoins(ctx, to, amount) {
      const store = ctx.store(BANK);
      for (const c of amount)
        writeAmount(store, supplyKey(c.denom), readAmount(store, supplyKey(c.denom)) + amountOf(c));
      ctx.emit({
        type: "coinbase",
        attributes: [
          { key: "minter", value: to },
          { key: "amount", value: coinsToString(amount) },
        ],
      });
      add(ctx, to, amount);
      auth.ensureAccount(ctx, to);
    },
    getSupply: (ctx, denom) => readAmount(ctx.store(BANK), supplyKey(denom)),
    setDenomMetadata(ctx, metadata) {
      if (!isValidDenom(metadata.base)) throw sdkErrors.invalidCoins.wrap(`invalid denom: ${metadata.base}`);
      ctx.store(BANK).set(`${METADATA_PREFIX}${metadata.base}`, Metadata.encode(metadata).finish());
    },
    getDenomMetadata(ctx, denom) {
      const raw = ctx.store(BANK).get(`${METADATA_PREFIX}${denom}`);
      return raw === undefined ? undefined : Metadata.decode(raw);
    },
  };
}
