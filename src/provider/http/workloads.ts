import type { FastifyInstance } from "fastify";
import { withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { imageRepository } from "../../core/manifest/index.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import type { BackendClient, ProvisionEntry } from "../backend-client/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import type { Placements } from "../store/index.ts";

/**
 * `GET /workloads?lease_uuid=<u1>&lease_uuid=<u2>…` (no token; the manifest-admin app asks
 * for the page of leases it shows): what runs for each lease, in the reference's shape
 * `{"workloads": {"<lease_uuid>": {status, created_at, backend_name, items}}, "warnings": []}`.
 * A lease no backend reports is absent; each backend that could not answer is one warning.
 * A lease with a confirmed owner and no unresolved attempt asks only that owner; others ask
 * every unfenced backend. The answer is world-readable: it carries no tenant, partition or
 * image tag (an image is its repository only), and the refusals are the reference's texts.
 */
export const MAX_LOOKUP_UUIDS = 100;
/** created_at of a row that reports none: the reference's zero time. */
const ZERO_TIME = "0001-01-01T00:00:00Z";

export interface WorkloadsSources {
  config: ProviderConfig;
  store: Placements;
  clients: ReadonlyMap<string, BackendClient>;
  clock: Clock;
}

/** How long /workloads waits for each backend's rows; a late one is reported unavailable. */
const LOOKUP_BUDGET_MS = 10_000;

interface WorkloadItem {
  service_name?: string;
  sku: string;
  image?: string;
  count: number;
}

interface Workload {
  status: string;
  created_at: string;
  backend_name: string;
  items: WorkloadItem[];
}

/** The lease UUIDs asked for, deduplicated in order; a string is the 400's text. */
export function lookupUuids(query: unknown): string[] | string {
  const raw = (query as Record<string, unknown> | undefined)?.lease_uuid;
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  if (list.length === 0) return "lease_uuid query parameter required";
  if (list.length > MAX_LOOKUP_UUIDS) return `too many lease_uuid values (max ${MAX_LOOKUP_UUIDS})`;
  if (!list.every((u) => typeof u === "string" && isCanonicalUuid(u))) return "invalid lease_uuid";
  return [...new Set(list as string[])];
}

function workloadOf(e: ProvisionEntry, backend: string): Workload {
  const w = e.workload;
  const image = (ref: string | undefined) =>
    ref === undefined || ref === "" ? {} : { image: imageRepository(ref) };
  const items: WorkloadItem[] =
    w.items !== undefined && w.items.length > 0
      ? w.items.map((i) => ({
          ...(i.serviceName === undefined ? {} : { service_name: i.serviceName }),
          sku: i.sku,
          ...image(
            i.serviceName !== undefined && w.serviceImages?.[i.serviceName] !== undefined
              ? w.serviceImages[i.serviceName]
              : w.items?.length === 1
                ? w.image
                : undefined,
          ),
          count: i.quantity,
        }))
      : [{ sku: w.sku ?? "", ...image(w.image), count: w.quantity ?? 0 }];
  return { status: e.status, created_at: e.createdAt ?? ZERO_TIME, backend_name: backend, items };
}

export function registerWorkloadsRoute(app: FastifyInstance, s: WorkloadsSources): void {
  app.get("/workloads", async (req, reply) => {
    const leases = lookupUuids(req.query);
    if (typeof leases === "string") return reply.code(400).send({ error: leases, code: 400 });
    const ask = new Map<string, string[]>();
    for (const lease of leases) {
      const placement = s.store.placement(lease);
      const confirmedOwner =
        placement?.state === "confirmed" && s.store.attemptFor(lease) === undefined
          ? placement.owner
          : undefined;
      const targets =
        confirmedOwner !== undefined
          ? [confirmedOwner]
          : s.config.backends.filter((b) => !b.fenced).map((b) => b.name);
      for (const t of targets) ask.set(t, [...(ask.get(t) ?? []), lease]);
    }
    const answers = await Promise.all(
      [...ask]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) // code units: no ICU collator (health.ts)
        .map(async ([backend, batch]) => {
          const client = s.clients.get(backend);
          try {
            if (client === undefined) throw new Error("not configured");
            const timedOut = () =>
              new FredError("ERR_BACKEND_TIMEOUT", `backend ${backend}: workloads lookup timed out`);
            const rows = await withDeadline(s.clock, LOOKUP_BUDGET_MS, undefined, timedOut, (signal) =>
              client.provisionsFor(batch, signal),
            );
            return { backend, rows };
          } catch (err) {
            req.log.warn({ err, backend }, "workloads: backend lookup failed");
            return { backend, rows: undefined };
          }
        }),
    );
    const found = new Map<string, Workload>();
    const warnings: string[] = [];
    for (const { backend, rows } of answers) {
      if (rows === undefined) {
        warnings.push(`backend ${JSON.stringify(backend)} unavailable`);
        continue;
      }
      // Only leases asked of this backend, each once (the first backend to report one keeps it).
      const asked = new Set(ask.get(backend));
      for (const row of rows) {
        if (asked.has(row.leaseUuid) && !found.has(row.leaseUuid))
          found.set(row.leaseUuid, workloadOf(row, backend));
      }
    }
    const workloads: Record<string, Workload> = {};
    for (const lease of leases) {
      const w = found.get(lease);
      if (w !== undefined) workloads[lease] = w;
    }
    return reply.send({ workloads, warnings });
  });
}
