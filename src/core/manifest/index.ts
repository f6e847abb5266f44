/**
 * Tenant manifests (fred-wire §3): parse, validate and normalise both document shapes.
 *
 *   const result = parseManifest(bytes);            // never throws for bad input
 *   if (!result.ok) return reject(result.problems); // [{ path: "/services/web/image", message }]
 *   for (const [name, spec] of Object.entries(result.manifest.services)) …
 *
 * Lease items and the 1:1 service ↔ item match live in `../lease-items.ts`.
 */
export { formatManifest } from "./format.ts";
export { DEFAULT_SERVICE_NAME, MANIFEST_LIMITS } from "./limits.ts";
export {
  type Manifest,
  type ParseManifestOptions,
  type ParseManifestResult,
  type Problem,
  parseManifest,
  problemsFromIssues,
  problemWording,
  toPointer,
} from "./parse.ts";
export { keepStoredCredentials, REDACTED_PASSWORD, redactManifestPayload } from "./redact.ts";
export {
  DEFAULT_REGISTRY,
  ImageReferenceError,
  imageRepository,
  parseRegistry,
  registryHost,
} from "./rules.ts";
export type { ServiceSpec } from "./schema.ts";
export { manifestDocumentSchema } from "./schema.ts";
