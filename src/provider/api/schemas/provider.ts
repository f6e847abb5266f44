import { z } from "zod";

/**
 * `GET /v1/provider`: what a client checks before it pays (which SKUs this provider
 * serves, which registries its images may come from, the manifest caps and the request
 * budgets). The handler builds its answer as this schema's type; the OpenAPI document
 * is generated from it.
 */
const registries = z
  .array(z.string())
  .nullable()
  .describe("Registry domains images may come from; [] admits none, null means any registry");

export const providerBackendSchema = z.object({
  name: z.string(),
  skus: z.array(z.string()).describe("SKU UUIDs the backend serves"),
  default: z.boolean().describe("Takes the SKUs no backend lists"),
  status: z.enum(["available", "draining", "fenced", "unreachable", "unknown"]),
  allowed_registries: registries.optional().describe("Absent until the backend has said"),
});

const bucket = z.object({ rps: z.number(), burst: z.number() });

export const providerInfoSchema = z.object({
  provider_uuid: z.string(),
  provider_address: z.string(),
  version: z.string(),
  commit: z.string().nullable().describe("The git commit providerd runs from; null when not from a checkout"),
  backends: z.array(providerBackendSchema),
  allowed_registries: registries,
  limits: z.object({
    max_request_body_bytes: z.number().int(),
    max_manifest_bytes: z.number().int(),
    max_ports: z.number().int(),
    max_env: z.number().int(),
    max_labels: z.number().int(),
    max_tmpfs: z.number().int(),
    max_expose: z.number().int(),
    max_service_name_length: z.number().int(),
    max_dependency_depth: z.number().int(),
    min_stop_grace_period_seconds: z.number(),
    max_stop_grace_period_seconds: z.number(),
  }),
  rate_limits: z.object({
    per_ip: bucket,
    per_tenant: bucket.describe("rps 0: no per-tenant limit"),
  }),
  token_lifetime_seconds: z.number().int(),
  token_future_skew_seconds: z.number().int(),
  features: z
    .object({
      shell: z.boolean().describe("GET /v1/leases/{uuid}/shell is served (tenant_shell_enabled)"),
    })
    .describe("Optional tenant features this provider serves"),
});

export type ProviderInfo = z.infer<typeof providerInfoSchema>;
