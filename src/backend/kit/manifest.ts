import { parseManifest } from "../../core/manifest/index.ts";
import type { ParsedManifest } from "./substrate.ts";
import { MAX_PAYLOAD_BYTES, WireError } from "./wire.ts";

/**
 * The tenant manifest parser as the kit's `parseManifest` hook: bad manifests become a
 * 400 `invalid_manifest` listing the first problems (JSON pointer + message).
 */
const SHOWN_PROBLEMS = 5;

export function parseTenantManifest(payload: Uint8Array): ParsedManifest {
  const result = parseManifest(payload, { maxBytes: MAX_PAYLOAD_BYTES });
  if (!result.ok) {
    const shown = result.problems.slice(0, SHOWN_PROBLEMS).map((p) => `${p.path || "/"}: ${p.message}`);
    const more =
      result.problems.length > SHOWN_PROBLEMS ? ` (+${result.problems.length - SHOWN_PROBLEMS} more)` : "";
    throw new WireError(`invalid manifest: ${shown.join("; ")}${more}`, "invalid_manifest");
  }
  return result.manifest;
}
