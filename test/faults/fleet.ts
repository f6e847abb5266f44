import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { BackendClient, type ProvisionEntry } from "../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../src/provider/config/index.ts";
import { PlacementStore } from "../../src/provider/store/index.ts";
import { SECRETS, SIDS, type Stack } from "../provider/e2e/stack.ts";
import { until } from "../support/index.ts";

/**
 * The check every fault scenario ends with: every PENDING/ACTIVE lease on chain has exactly
 * one workload, on exactly its placement owner; every ended lease has none anywhere; no
 * attempt or conflict is left among the scenario's leases; and (the destructive side) no
 * live lease lost its workload. Read from outside providerd: the chain through the tenant's
 * client, each backend through a signed client of its own, the placement store read-only.
 */
const LIVE = new Set(["LEASE_STATE_PENDING", "LEASE_STATE_ACTIVE"]);

/** Every stack backend's inventory, by backend name (mock-1, …); a backend that fails is left out. */
export async function inventories(stack: Stack): Promise<Map<string, ProvisionEntry[]>> {
  const config = parseProviderConfig(readFileSync(stack.configPath, "utf8"));
  const out = new Map<string, ProvisionEntry[]>();
  await Promise.all(
    config.backends.map(async (backend, i) => {
      const client = await BackendClient.create({ backend, secret: SECRETS[i]!, storageId: SIDS[i] });
      try {
        out.set(backend.name, (await client.inventory(AbortSignal.timeout(5_000))).provisions);
      } catch {
        // Silent (stopped, hanging): the scenario decides whether that is expected.
      } finally {
        await client.close();
      }
    }),
  );
  return out;
}

/** Reads providerd's placement store beside it (read-only: providerd may be running). */
export function withStore<T>(stack: Stack, fn: (s: PlacementStore) => T): T {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return fn(s);
  } finally {
    s.close();
  }
}

export interface FleetOptions {
  /** Backends whose inventory cannot be read in this scenario; their leases are not judged. */
  silent?: readonly string[];
  /** Leases whose unresolved attempt the scenario itself leaves (none by default). */
  attemptsAllowed?: readonly string[];
}

/** What is wrong with the fleet for `leases`, as readable lines (empty: converged). */
export async function fleetProblems(
  stack: Stack,
  leases: readonly string[],
  opts: FleetOptions = {},
): Promise<string[]> {
  const silent = new Set(opts.silent ?? []);
  const [states, inv] = await Promise.all([
    Promise.all(leases.map((l) => stack.leaseState(l))),
    inventories(stack),
  ]);
  const problems: string[] = [];
  for (const name of stack.mocks.map((_, i) => `mock-${i + 1}`)) {
    if (!silent.has(name) && !inv.has(name)) problems.push(`${name}: inventory unreadable`);
  }
  withStore(stack, (store) => {
    leases.forEach((lease, i) => {
      const state = states[i] ?? "not found";
      const placement = store.placements.placement(lease);
      const rows = [...inv].flatMap(([b, list]) =>
        list.filter((r) => r.leaseUuid === lease).map((r) => ({ b, status: r.status })),
      );
      const on = rows.map((r) => r.b);
      if (placement !== undefined && silent.has(placement.owner ?? "")) return;
      if (LIVE.has(state)) {
        if (placement?.state !== "confirmed")
          problems.push(`${lease} ${state}: placement ${placement?.state}`);
        else if (on.length !== 1 || on[0] !== placement.owner)
          problems.push(`${lease} ${state}: owner ${placement.owner}, workloads on [${on}]`);
        else if (state === "LEASE_STATE_ACTIVE" && rows[0]?.status !== "ready")
          problems.push(`${lease} ${state}: workload ${rows[0]?.status}`);
      } else if (on.length > 0) {
        problems.push(`${lease} ${state}: workloads left on [${on}]`);
      }
      if (store.placements.attemptFor(lease) !== undefined && !(opts.attemptsAllowed ?? []).includes(lease))
        problems.push(`${lease} ${state}: unresolved attempt`);
      if (placement?.state === "conflict") problems.push(`${lease} ${state}: conflict`);
    });
  });
  return problems;
}

/** Waits until the fleet converged for `leases`, then asserts it (naming what is still wrong). */
export async function assertConverged(
  stack: Stack,
  leases: readonly string[],
  opts: FleetOptions & { timeoutMs?: number } = {},
): Promise<void> {
  let last: string[] = [];
  await until(
    async () => {
      last = await fleetProblems(stack, leases, opts);
      return last.length === 0;
    },
    "the fleet to converge on what the chain says",
    {
      timeoutMs: opts.timeoutMs ?? 60_000,
      intervalMs: 200,
      context: () => `${last.join("\n")}\n${stack.providerd?.logTail() ?? "providerd is not running"}`,
    },
  );
  assert.deepEqual(await fleetProblems(stack, leases, opts), []);
}

/** A providerd metric's value (0 when absent); `labels` as Prometheus prints them. */
export async function metric(stack: Stack, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${stack.api}/metrics`)).text();
  const prefix = labels === "" ? `${name} ` : `${name}{${labels}}`;
  return text
    .split("\n")
    .filter((l) => l.startsWith(prefix))
    .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
}

/** The providerd log lines (JSON) logged with `msg` so far. */
export function logged(stack: Stack, msg: string): Record<string, unknown>[] {
  return (stack.providerd?.stderr() ?? "")
    .split("\n")
    .filter((l) => l.includes(msg))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}
