import { z } from "zod";
import { usageShape } from "../../../core/backend-contract/index.ts";

/** `GET /v1/leases/{uuid}/usage`: the backend's usage body with the lease's identity (for the OpenAPI document). */
export const usageBodySchema = z.object({
  lease_uuid: z.string(),
  tenant: z.string(),
  provider_uuid: z.string(),
  ...usageShape,
});
