import { Counter, Histogram, type Registry } from "prom-client";

/**
 * The tenant API's own event counters: uploads by outcome and the size of stored ones,
 * and event-stream subscribers cut off for not reading (their pending frame is dropped).
 * Registered on the process's registry when the root passes one.
 */
export type UploadOutcome = "stored" | "hash_mismatch" | "conflict" | "too_large" | "invalid" | "error";

export interface TenantCounters {
  upload(outcome: UploadOutcome, bytes?: number): void;
  eventDropped(): void;
}

export function tenantCounters(registry: Registry | undefined): TenantCounters {
  const registers = registry === undefined ? [] : [registry];
  const uploads = new Counter({
    name: "fred_payload_uploads_total",
    help: "Tenant payload uploads (POST /v1/leases/{uuid}/data), by outcome",
    labelNames: ["outcome"],
    registers,
  });
  const sizes = new Histogram({
    name: "fred_payload_size_bytes",
    help: "Size of each stored tenant payload",
    buckets: [256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304],
    registers,
  });
  const dropped = new Counter({
    name: "fred_events_dropped_total",
    help: "Event stream frames dropped because the subscriber was not reading (it is disconnected)",
    registers,
  });
  return {
    upload(outcome, bytes) {
      uploads.inc({ outcome });
      if (outcome === "stored" && bytes !== undefined) sizes.observe(bytes);
    },
    eventDropped: () => dropped.inc(),
  };
}
