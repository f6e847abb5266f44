/** What x/billing (and genesis) may ask of x/sku. */
import type { Provider, SKU, SkuParams } from "../../../chain/proto/index.ts";
import type { ExecContext, QueryContext } from "../../module.ts";

export const SKU_MODULE = "sku";

export interface SkuKeeper {
  getParams(ctx: ExecContext | QueryContext): SkuParams;
  getProvider(ctx: ExecContext | QueryContext, uuid: string): Provider | undefined;
  getSku(ctx: ExecContext | QueryContext, uuid: string): SKU | undefined;
  /** Stores a new provider with a chain UUID; returns it. No events (callers emit). */
  addProvider(ctx: ExecContext, fields: Omit<Provider, "uuid">): Provider;
  addSku(ctx: ExecContext, fields: Omit<SKU, "uuid">): SKU;
  putProvider(ctx: ExecContext, provider: Provider): void;
  putSku(ctx: ExecContext, sku: SKU): void;
  /** Active SKUs of a provider in UUID order (at most `limit`). */
  activeSkusOf(ctx: ExecContext | QueryContext, providerUuid: string, limit: number): SKU[];
}
