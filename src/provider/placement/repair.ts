import { FredError } from "../../core/errors.ts";
import type { ProviderConfig } from "../config/index.ts";
import { type FleetReadDeps, fleetReadProblems, readInventory } from "./fleet-read.ts";
import { openToolStore } from "./tool-store.ts";

/**
 * `fred placement repair` (dry run unless `apply`): what needs an operator, each finding
 * with its evidence from identity-checked inventories of every configured backend:
 * - conflicts: which candidates report the lease now, which positively do not, which
 *   could not be asked;
 * - attempts and confirmed rows naming a backend that is no longer configured (gone).
 * `apply` resolves only what the evidence proves: a conflict exactly one candidate
 * reports while every other candidate answered a complete inventory without it becomes
 * that candidate's confirmed placement. Nothing is ever deleted here; a backup is
 * written before the first change.
 */
type Presence = "reports" | "absent" | "unreachable" | "not_configured" | "lost";

export interface RepairFinding {
  kind: "conflict" | "attempt_backend_gone" | "row_backend_gone";
  lease_uuid: string;
  backends: string[];
  evidence: Record<string, Presence>;
  /** What --apply does (or did) with it; undefined: needs an operator. */
  resolution: { adopt: string } | undefined;
}

export interface RepairSummary {
  placement_store: string;
  apply: boolean;
  backup: string | null;
  findings: RepairFinding[];
  resolved: string[];
}

export async function repairPlacements(
  config: ProviderConfig,
  apply: boolean,
  deps: FleetReadDeps,
): Promise<RepairSummary> {
  if (apply) {
    const problems = fleetReadProblems(config);
    if (problems.length > 0) {
      throw new FredError(
        "ERR_PLACEMENT_REPAIR_REFUSED",
        `${problems.join("; ")}; repair --apply refuses to run`,
      );
    }
  }
  const refuse = (m: string) => new FredError("ERR_PLACEMENT_REPAIR_REFUSED", m);
  await using opened = await openToolStore(config, "fred placement repair", { readonly: !apply, refuse });
  const { store, where: path } = opened;
  const pins = store.fleet.pins();
  const configured = new Set(config.backends.map((b) => b.name));
  // What each configured backend holds now (undefined: it could not be asked).
  const held = new Map<string, Set<string> | undefined>();
  for (const b of config.backends) {
    if (b.fenced || !pins.has(b.name)) {
      held.set(b.name, undefined);
      continue;
    }
    try {
      const inv = await readInventory(config, b, pins.get(b.name), deps, refuse);
      held.set(b.name, new Set([...inv.provisions.map((p) => p.leaseUuid), ...inv.retentions]));
    } catch (err) {
      if (!(err instanceof FredError)) throw err;
      held.set(b.name, undefined);
    }
  }
  const presence = (backend: string, lease: string): Presence => {
    if (store.fleet.isLost(backend)) return "lost";
    if (!configured.has(backend)) return "not_configured";
    const set = held.get(backend);
    return set === undefined ? "unreachable" : set.has(lease) ? "reports" : "absent";
  };
  const evidence = (lease: string, backends: readonly string[]) =>
    Object.fromEntries(backends.map((b) => [b, presence(b, lease)]));

  // A backend retired as lost is providerd's to settle (it ends those leases itself).
  const gone = (b: string) => !configured.has(b) && !store.fleet.isLost(b);
  const backendGone = (kind: RepairFinding["kind"], lease: string, backend: string): RepairFinding => ({
    kind,
    lease_uuid: lease,
    backends: [backend],
    evidence: evidence(lease, [backend]),
    resolution: undefined,
  });
  const findings: RepairFinding[] = [];
  for (const p of store.placements.placements()) {
    if (p.state === "conflict") {
      const ev = evidence(p.leaseUuid, p.candidates);
      const reporters = p.candidates.filter((c) => ev[c] === "reports");
      const provenAbsent = p.candidates.every((c) => ev[c] === "reports" || ev[c] === "absent");
      const resolution = reporters.length === 1 && provenAbsent ? { adopt: reporters[0]! } : undefined;
      findings.push({
        kind: "conflict",
        lease_uuid: p.leaseUuid,
        backends: p.candidates,
        evidence: ev,
        resolution,
      });
    } else if (p.owner !== undefined && gone(p.owner)) {
      findings.push(backendGone("row_backend_gone", p.leaseUuid, p.owner));
    }
  }
  for (const a of store.placements.unresolvedAttempts()) {
    if (gone(a.backend)) findings.push(backendGone("attempt_backend_gone", a.leaseUuid, a.backend));
  }

  const resolvable = findings.filter((f) => f.resolution !== undefined);
  let backup: string | null = null;
  const resolved: string[] = [];
  if (apply && resolvable.length > 0) {
    const now = deps.clock.now();
    backup = await opened.backup(now);
    store.placements.batch(() => {
      for (const f of resolvable) {
        store.placements.adoptPlacement(f.lease_uuid, f.resolution!.adopt, now);
        resolved.push(f.lease_uuid);
      }
    });
    await store.durable();
  }
  return { placement_store: path, apply, backup, findings, resolved };
}
