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
  role: z
    .enum(["leader", "standby"])
    .describe(
      "leader: this instance acts on chain and backends; standby: it serves reads and waits to take over",
    ),
  instance: z.string().describe("This providerd process's id, new at every start"),
  leader: z
    .string()
    .nullable()
    .describe("The instance that leads, as this one last saw it; null when none is known to"),
  version: z.string().describe("The fred package version"),
  commit: z.string().nullable().describe("The git commit providerd runs from; null when not from a checkout"),
  checks: z
    .record(z.string(), check)
    .describe("chain, backend:<name>, placement_store, placement_inventory, payload_store, token_tracker"),
  stats: z.object({ in_flight_provisions: z.number().int().min(0) }),
});

/**
 * `GET /workloads` (src/provider/http/workloads.ts): the reference's shape. World-readable,
 * so never a tenant, a partition or an image tag.
 */
export const workloadsQuerySchema = z.object({
  lease_uuid: z
    .array(z.string())
    .min(1)
    .max(100)
    .describe("Canonical lease UUIDs, 1 to 100, one lease_uuid parameter each (repeats are answered once)"),
});

const workloadItem = z.object({
  service_name: z.string().optional().describe("The service, for a stack"),
  sku: z.string(),
  image: z.string().optional().describe("The image's repository, without tag or digest"),
  count: z.number().int().min(0),
});

export const workloadsBodySchema = z.object({
  workloads: z
    .record(
      z.string(),
      z.object({
        status: z.string(),
        created_at: z.string(),
        backend_name: z.string(),
        items: z.array(workloadItem),
      }),
    )
    .describe("Per lease UUID asked for that a backend reports; unknown leases are absent"),
  warnings: z.array(z.string()).describe("One entry per backend that could not answer; [] when all did"),
});
