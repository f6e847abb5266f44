/**
 * The devnet's starting catalogue: one provider owned by the `provider` dev account and four
 * SKUs priced in the chain's PWR denom (three Docker sizes and one billing-only SKU that providerd acknowledges
 * without running anything). Prices divide evenly into per-second rates. The provider account
 * is on the module's allowed list, as a chain's admin would put an operator there, so a
 * local providerd can keep its own record's api_url current (fred up does on every start).
 */
import { Unit } from "../../../chain/proto/index.ts";
import type { GenesisContext } from "../../module.ts";
import { setSkuParams } from "./keeper.ts";
import type { SkuKeeper } from "./types.ts";

export const DEVNET_SKUS = [
  { name: "docker-small", perHour: 360_000n, billingOnly: false },
  { name: "docker-medium", perHour: 720_000n, billingOnly: false },
  { name: "docker-large", perHour: 1_440_000n, billingOnly: false },
  { name: "billing-only", perHour: 36_000n, billingOnly: true },
] as const;

export function initSkuGenesis(ctx: GenesisContext, keeper: SkuKeeper, pwrDenom: string): void {
  const owner = ctx.accounts.find((a) => a.name === "provider");
  if (owner === undefined) return;
  setSkuParams(ctx, { allowedList: [owner.address] });
  const provider = keeper.addProvider(ctx, {
    address: owner.address,
    payoutAddress: owner.address,
    metaHash: new Uint8Array(),
    active: true,
    apiUrl: "",
  });
  ctx.keys.provider_uuid = provider.uuid;
  ctx.keys.skus = [];
  for (const def of DEVNET_SKUS) {
    const sku = keeper.addSku(ctx, {
      providerUuid: provider.uuid,
      name: def.name,
      unit: Unit.UNIT_PER_HOUR,
      basePrice: { denom: pwrDenom, amount: def.perHour.toString() },
      metaHash: new Uint8Array(),
      active: true,
    });
    ctx.keys.skus.push({ uuid: sku.uuid, name: sku.name, billing_only: def.billingOnly });
  }
}
