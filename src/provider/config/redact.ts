import type { ProviderConfig } from "./load.ts";

const REDACTED = "[redacted]";

function mask(secret: string): string {
  return secret === "" ? "" : REDACTED;
}

/**
 * A copy of the configuration that is safe to log or print: every HMAC key and the
 * legacy callback secret are replaced by a marker (an empty value stays empty, so the
 * reader still sees which keys are configured).
 */
export function redactConfig(config: ProviderConfig): Record<string, unknown> {
  return {
    ...config,
    callbackSecret: mask(config.callbackSecret),
    backends: config.backends.map((b) => ({
      ...b,
      hmacSecret: mask(b.hmacSecret),
      hmacSecretPrevious: mask(b.hmacSecretPrevious),
    })),
  };
}
