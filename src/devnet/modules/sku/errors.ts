/** x/sku registered errors (codespace `sku`). */
import { defineError } from "../../errors.ts";

export const skuErrors = {
  invalidSku: defineError("sku", 1, "invalid sku"),
  skuNotFound: defineError("sku", 2, "sku not found"),
  unauthorized: defineError("sku", 3, "unauthorized"),
  invalidConfig: defineError("sku", 4, "invalid module configuration"),
  invalidProvider: defineError("sku", 5, "invalid provider"),
  providerNotFound: defineError("sku", 6, "provider not found"),
  invalidApiUrl: defineError("sku", 7, "invalid API URL"),
} as const;
