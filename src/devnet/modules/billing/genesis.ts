/**
 * Devnet billing genesis: params (defaults, or every count limit at its cap for
 * `--profile bench`), and for every `tenantN` dev account a funded credit account plus upwr
 * in the wallet so MsgFundCredit works out of the box; the `faucet` account gets the PWR
 * the devnet faucet hands out.
 */
import type { GenesisContext } from "../../module.ts";
import type { BankKeeper } from "../bank/types.ts";
import { DEVNET_PRICE_DENOM } from "../sku/genesis.ts";
import { newAccount } from "./ledger.ts";
import { BENCH_PARAMS, DEFAULT_PARAMS } from "./params.ts";
import { putAccount, setParams } from "./store.ts";

/** Credit each tenant starts with: 1 000 PWR, enough for 1000 docker-small leases' reservations. */
export const GENESIS_CREDIT = 1_000_000_000n;
export const GENESIS_WALLET_PWR = 1_000_000_000n;
/** PWR the `faucet` dev account holds for the devnet faucet to hand out: 1 000 000 000 PWR. */
export const FAUCET_WALLET_PWR = 1_000_000_000_000_000n;

export function initBillingGenesis(ctx: GenesisContext, bank: BankKeeper): void {
  setParams(ctx, ctx.profile === "bench" ? BENCH_PARAMS : DEFAULT_PARAMS);
  for (const acc of ctx.accounts) {
    if (acc.name === "faucet")
      bank.mintCoins(ctx, acc.address, [{ denom: DEVNET_PRICE_DENOM, amount: FAUCET_WALLET_PWR.toString() }]);
    if (!/^tenant[0-9]+$/.test(acc.name)) continue;
    const account = newAccount(acc.address.toLowerCase());
    bank.mintCoins(ctx, account.creditAddress, [
      { denom: DEVNET_PRICE_DENOM, amount: GENESIS_CREDIT.toString() },
    ]);
    bank.mintCoins(ctx, acc.address, [{ denom: DEVNET_PRICE_DENOM, amount: GENESIS_WALLET_PWR.toString() }]);
    putAccount(ctx, account);
  }
}
