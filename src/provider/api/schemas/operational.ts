import { z } from "zod";

/**
 * `GET /health` and `GET /readyz` (src/provider/http/health.ts builds the body; the
 * document describes it with this schema, and the OpenAPI test holds real answers to it).
 */
const check = z.object({
  status: z.enum(["healthy", "unhealthy"]),
  message: z.string().optional().describe("A fixed phrase, never internal detail"),
});

export const healthReportSchema = z.object({
  status: z.enum(["healthy", "degraded", "unhealthy"]),
  provider_uuid: z.string(),
  version: z.string().describe("The fred package version"),
  commit: z.string().nullable().describe("The git commit providerd runs from; null when not from a checkout"),
  checks: z
    .record(z.string(), check)
    .describe("chain, backend:<name>, placement_store, placement_inventory, payload_store, token_tracker"),
  stats: z.object({ in_flight_provisions: z.number().int().min(0) }),
});
