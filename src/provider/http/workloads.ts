import type { FastifyInstance } from "fastify";
import { isCanonicalUuid } from "../../core/uuid.ts";
import type { BackendClient, ProvisionEntry } from "../backend-client/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import type { PlacementStore } from "../store/index.ts";

/**
 * `GET /workloads?lease_uuid=…` (1..100): workload metadata per lease. A lease with a
 * confirmed owner and no unresolved attempt asks only that owner; others ask every
 * unfenced backend. A backend that cannot answer becomes a warning, not an error.
 */
export const MAX_LOOKUP_UUIDS = 100;

export interface WorkloadsSources {
  config: ProviderConfig;
  store: PlacementStore;
  clients: ReadonlyMap<string, BackendClient>;
}

interface Workload {
  lease_uuid: string;
  backend: string;
  status: string;
  fail_count?: number;
  created_at?: string;
}

export function registerWorkloadsRoute(app: FastifyInstance, s: WorkloadsSources): void {
  app.get("/workloads", async (req, reply) => {
    const raw = (req.query as Record<string, unknown>).lease_uuid;
    const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    if (list.length < 1 || list.length > MAX_LOOKUP_UUIDS) {
      return reply
        .code(400)
        .send({ error: `between 1 and ${MAX_LOOKUP_UUIDS} lease_uuid parameters are required`, code: 400 });
    }
    const bad = list.find((u) => !isCanonicalUuid(u));
    if (bad !== undefined) {
      return reply.code(400).send({ error: "every lease_uuid must be a canonical UUID", code: 400 });
    }
    const leases = [...new Set(list as string[])];
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
    const workloads: Workload[] = [];
    const warnings: string[] = [];
    await Promise.all(
      [...ask].map(async ([backend, batch]) => {
        const client = s.clients.get(backend);
        let found: ProvisionEntry[];
        try {
          if (client === undefined) throw new Error("not configured");
          found = await client.provisionsFor(batch, AbortSignal.timeout(10_000));
        } catch {
          warnings.push(`backend ${backend} is unavailable`);
          return;
        }
        for (const e of found) {
          const w: Workload = { lease_uuid: e.leaseUuid, backend, status: e.status };
          if (e.failCount !== undefined) w.fail_count = e.failCount;
          if (e.createdAt !== undefined) w.created_at = e.createdAt;
          workloads.push(w);
        }
      }),
    );
    workloads.sort((a, b) => a.lease_uuid.localeCompare(b.lease_uuid) || a.backend.localeCompare(b.backend));
    return reply.send({ workloads, warnings: warnings.sort() });
  });
}
