import { redactManifestPayload } from "../../core/manifest/index.ts";
import type { Journal } from "./journal/journal.ts";
import type { Substrate, WorkloadSpec } from "./substrate.ts";

/**
 * Pins a release's images before anything is created from them: the substrate resolves
 * each service's reference (`resolveImages`), the journal records the result with the
 * release (durably, so a crash after the pull never re-resolves a moved tag for the same
 * release), and the spec carries it from then on. A spec already pinned, or a substrate
 * without pinning, passes through unchanged.
 *
 * `reuse`: a re-provision of the lease with the same manifest (after its workload was lost
 * or failed) keeps the images the newest earlier release of that manifest was pinned to,
 * instead of following tags that may have moved since; a different manifest resolves anew.
 */
export async function withPinnedImages(
  journal: Journal,
  substrate: Substrate,
  spec: WorkloadSpec,
  signal: AbortSignal,
  reuse: boolean,
): Promise<WorkloadSpec> {
  if (spec.images !== undefined || substrate.resolveImages === undefined) return spec;
  const images =
    (reuse ? sameManifestPins(journal, spec) : undefined) ?? (await substrate.resolveImages(spec, signal));
  journal.pinImages(spec.leaseUuid, spec.release, images);
  await journal.durable();
  return { ...spec, images };
}

function sameManifestPins(
  journal: Journal,
  spec: WorkloadSpec,
): Readonly<Record<string, string>> | undefined {
  if (spec.payload === undefined) return undefined;
  const manifest = Buffer.from(redactManifestPayload(spec.payload));
  const earlier = journal
    .releases(spec.leaseUuid)
    .filter((r) => r.version < spec.release && r.images !== undefined && r.manifest?.equals(manifest));
  return earlier.at(-1)?.images;
}
