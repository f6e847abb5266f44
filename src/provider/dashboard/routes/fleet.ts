import type { DashboardContext } from "../context.ts";
import { iso, isoOrNull } from "./shapes.ts";

/**
 * `GET /api/fleet`: every configured backend. Health is the latest routing poll's
 * `/stats` answer (the reconciler's latest sweep before the first poll); CPU, memory and
 * disk come from that reading (memory and disk in bytes; null when a backend does not
 * report them), and the version our backends add to it (null from others); leases count the confirmed placements the
 * store holds for the backend; last_inventory_at is the latest complete inventory read.
 */
const BREAKER = { closed: "closed", open: "open", "half-open": "half_open", isolated: "open" } as const;

const MB = 1024 * 1024;
const bytes = (mb: { allocated: number; total: number } | undefined) =>
  mb === undefined ? null : { allocated: mb.allocated * MB, total: mb.total * MB };

export async function fleet(ctx: DashboardContext) {
  const { s } = ctx;
  const tally = await ctx.storeTally();
  const pins = new Map(s.fleet.backends().map((p) => [p.name, p]));
  const swept = s.backendHealthy();
  return {
    generated_at: iso(s.clock.now()),
    leases_as_of: iso(tally.asOfMs),
    backends: s.config.backends.map((b) => {
      const reading = ctx.stats(b.name);
      const stats = reading?.stats;
      const pin = pins.get(b.name);
      const client = s.clients.get(b.name);
      const healthy = b.fenced
        ? false
        : reading === undefined
          ? (swept.get(b.name) ?? false)
          : stats !== undefined;
      return {
        name: b.name,
        // A co-located backend's socket has no host: its unix:/path says where it is.
        url_host: b.scheme === "unix" ? b.url : new URL(b.url).host,
        healthy,
        version: stats?.version ?? null,
        storage_id: pin?.storageId ?? null,
        fenced: b.fenced,
        draining: b.draining,
        default: b.isDefault,
        breaker: client === undefined ? null : BREAKER[client.circuitState],
        cpu: stats === undefined ? null : { allocated: stats.allocatedCpuCores, total: stats.totalCpuCores },
        memory: bytes(stats?.memoryMb),
        disk: bytes(stats?.diskMb),
        disk_withheld: stats?.diskWithheld ?? null,
        leases: tally.byBackend.get(b.name) ?? 0,
        skus: [...b.skus],
        last_inventory_at: isoOrNull(pin?.baseline?.at),
        last_stats_at: isoOrNull(reading?.atMs),
      };
    }),
  };
}
