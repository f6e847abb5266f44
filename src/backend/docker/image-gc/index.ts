/** Garbage collection of the images the Docker backend brought onto the host (issue 33). */
export { ImageCollector, type ImageCollectorOptions } from "./collector.ts";
export { ImageGate } from "./gate.ts";
export { ImageLedger } from "./ledger.ts";
export {
  type CollectionFacts,
  type CollectionPlan,
  familiarTag,
  type ImageGcPolicy,
  type LedgerImage,
  planCollection,
  removalTargets,
  usedPercent,
} from "./policy.ts";
