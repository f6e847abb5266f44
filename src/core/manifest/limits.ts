/**
 * Numeric limits of the tenant manifest (fred-wire §3.2–3.4). They live in one place so
 * the zod schema, the generated JSON Schema, the tests and the tenant guide agree.
 */
export const MANIFEST_LIMITS = Object.freeze({
  /** Default cap on the raw document, checked before any parsing (1 MiB, like `/data`). */
  maxBytes: 1024 * 1024,
  maxPorts: 64,
  maxEnv: 256,
  maxLabels: 128,
  /** Extra tmpfs mounts on top of the backend's own /tmp and /run. */
  maxTmpfs: 4,
  maxExpose: 64,
  serviceNameMaxLength: 63,
  /** Longest allowed depends_on chain, counted in edges (a → b is depth 1). */
  maxDependencyDepth: 10,
  stopGracePeriodMinNs: 1e9,
  stopGracePeriodMaxNs: 120e9,
  /** Each of credentials.host, .username and .password (a registry token fits easily). */
  credentialsFieldMaxLength: 4096,
  /** Problems beyond this many are summarised in one final line instead of listed. */
  maxProblems: 100,
});

/** The synthetic service name a flat (single-service) manifest and an unnamed lease item get. */
export const DEFAULT_SERVICE_NAME = "app";
