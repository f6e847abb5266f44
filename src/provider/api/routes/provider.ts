import type { FastifyInstance } from "fastify";
import { TOKEN_MAX_AGE_SECONDS, TOKEN_MAX_FUTURE_SKEW_SECONDS } from "../../../auth/token.ts";
import { LIMITS } from "../../../core/backend-contract/index.ts";
import { MANIFEST_LIMITS } from "../../../core/manifest/index.ts";
import { fredVersion } from "../../../version.ts";
import type { ProviderConfig } from "../../config/index.ts";
import { type BackendCatalog, unionOfRegistries } from "../backend-catalog.ts";
import type { ProviderInfo } from "../schemas/provider.ts";

/**
 * `GET /v1/provider` (no token; the per-IP rate limit applies as everywhere): who this
 * provider is and what it accepts, answered from configuration and the backends' last
 * `/stats` readings (never a backend call per request). A backend that cannot be reached
 * is named with `status: "unreachable"`; the answer itself does not depend on it.
 */
export function providerInfo(config: ProviderConfig, catalog: BackendCatalog): ProviderInfo {
  const entries = catalog.entries();
  return {
    provider_uuid: config.providerUuid,
    provider_address: config.providerAddress,
    version: fredVersion().version,
    commit: fredVersion().commit ?? null,
    backends: entries.map((e) => ({
      name: e.name,
      skus: [...e.skus],
      default: e.isDefault,
      status: e.status,
      ...(e.allowedRegistries === undefined
        ? {}
        : { allowed_registries: e.allowedRegistries === null ? null : [...e.allowedRegistries] }),
    })),
    allowed_registries: unionOfRegistries(entries),
    limits: {
      max_request_body_bytes: config.maxRequestBodySize,
      // The backend parses a manifest of at most this many bytes, whatever the upload allows.
      max_manifest_bytes: Math.min(MANIFEST_LIMITS.maxBytes, LIMITS.payloadBytes),
      max_ports: MANIFEST_LIMITS.maxPorts,
      max_env: MANIFEST_LIMITS.maxEnv,
      max_labels: MANIFEST_LIMITS.maxLabels,
      max_tmpfs: MANIFEST_LIMITS.maxTmpfs,
      max_expose: MANIFEST_LIMITS.maxExpose,
      max_service_name_length: MANIFEST_LIMITS.serviceNameMaxLength,
      max_dependency_depth: MANIFEST_LIMITS.maxDependencyDepth,
      min_stop_grace_period_seconds: MANIFEST_LIMITS.stopGracePeriodMinNs / 1e9,
      max_stop_grace_period_seconds: MANIFEST_LIMITS.stopGracePeriodMaxNs / 1e9,
    },
    rate_limits: {
      per_ip: { rps: config.rateLimitRps, burst: config.rateLimitBurst },
      per_tenant: { rps: config.tenantRateLimitRps, burst: config.tenantRateLimitBurst },
    },
    token_lifetime_seconds: TOKEN_MAX_AGE_SECONDS,
    token_future_skew_seconds: TOKEN_MAX_FUTURE_SKEW_SECONDS,
    features: { shell: config.tenantShellEnabled },
  };
}

export function registerProviderRoute(
  app: FastifyInstance,
  config: ProviderConfig,
  catalog: BackendCatalog,
): void {
  app.get("/v1/provider", async (_req, reply) => reply.code(200).send(providerInfo(config, catalog)));
}
