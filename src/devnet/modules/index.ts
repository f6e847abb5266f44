import type { ModuleFactory } from "../module.ts";
import { authModule } from "./auth/index.ts";
import { authzModule } from "./authz/index.ts";
import { bankModule } from "./bank/index.ts";
import { billingModule } from "./billing/index.ts";
import { skuModule } from "./sku/index.ts";

/**
 * Every module of the devnet, in genesis / BeginBlock / EndBlock order. A module plugs in
 * with one import and one line here (see ../module.ts); the node core never changes.
 */
export const moduleFactories: ModuleFactory[] = [
  authModule,
  bankModule,
  skuModule,
  billingModule,
  authzModule,
];
