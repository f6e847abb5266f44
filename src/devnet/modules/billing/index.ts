/** x/billing module: credit, leases, settlement, withdrawals and EndBlock expiry. */
import type { AppHandle, DevnetModule } from "../../module.ts";
import { BANK, type BankKeeper } from "../bank/types.ts";
import { SKU_MODULE, type SkuKeeper } from "../sku/types.ts";
import { expirePending } from "./end-block.ts";
import { initBillingGenesis } from "./genesis.ts";
import type { BillingDeps } from "./ledger.ts";
import { adminMessages } from "./msg-admin.ts";
import { createMessages } from "./msg-create.ts";
import { lifecycleMessages } from "./msg-lifecycle.ts";
import { withdrawMessages } from "./msg-withdraw.ts";
import { billingQueries } from "./queries.ts";
import { BILLING } from "./store.ts";

export { BILLING } from "./store.ts";

export function billingModule(app: AppHandle): DevnetModule {
  const deps: BillingDeps = {
    bank: app.keeper<BankKeeper>(BANK),
    sku: app.keeper<SkuKeeper>(SKU_MODULE),
    authority: app.authority.toLowerCase(),
    prefix: app.bech32Prefix,
  };
  return {
    name: BILLING,
    messages: [
      ...createMessages(deps),
      ...lifecycleMessages(deps),
      ...withdrawMessages(deps),
      ...adminMessages(deps),
    ],
    queries: billingQueries(deps),
    initGenesis: (ctx) => initBillingGenesis(ctx, deps.bank, app.pwrDenom),
    endBlock: expirePending,
  };
}
