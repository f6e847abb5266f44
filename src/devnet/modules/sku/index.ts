/** x/sku module: providers and SKUs (Msgs, queries, devnet genesis). */
import type { AppHandle, DevnetModule } from "../../module.ts";
import { initSkuGenesis } from "./genesis.ts";
import { createSkuKeeper } from "./keeper.ts";
import { skuMessages } from "./msgs.ts";
import { skuQueries } from "./queries.ts";
import { SKU_MODULE } from "./types.ts";

export { SKU_MODULE, type SkuKeeper } from "./types.ts";

export function skuModule(app: AppHandle): DevnetModule {
  const keeper = createSkuKeeper();
  return {
    name: SKU_MODULE,
    keeper,
    messages: skuMessages({ keeper, authority: app.authority.toLowerCase(), prefix: app.bech32Prefix }),
    queries: skuQueries(keeper, app.bech32Prefix),
    initGenesis: (ctx) => initSkuGenesis(ctx, keeper, app.pwrDenom),
  };
}
