import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Stack } from "../provider/e2e/stack.ts";
import { seededRandom } from "../support/seeded-random.ts";
import { until } from "../support/until.ts";
import { assertConverged, metric } from "./fleet.ts";

/**
 * The chaos run (devnet, two mock backends serving the same SKU, providerd sweeping every
 * 2 s): leases are created in bursts with closes mixed in, while providerd and mock-1 are
 * each SIGKILLed at moments a seeded generator picks, several times. After the last
 * restart and a sweep, the fleet check holds for every lease, and no lease was
 * acknowledged twice (each providerd process's log, kept across the kills, names every
 * acknowledgement transaction it saw succeed on chain).
 *
 * CHAOS_SEED=<n> replays a run (the seed is printed); CHAOS_LEASES=1000 runs the long one
 * (default 200, kept within about a minute).
 */
const SEED = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const LEASES = Number(process.env.CHAOS_LEASES ?? 200);
const BURSTS = 8;
const stack = new Stack();
const logs: string[] = [];

before(async () => {
  console.error(`chaos: seed ${SEED}, ${LEASES} leases (CHAOS_SEED=${SEED} replays it)`);
  await stack.start(
    () => [{}, {}],
    (s) => {
      const small = s.sku("docker-small");
      s.backendOverrides = [{ skus: [small] }, { skus: [small] }];
      s.extraConfig = { reconciliation_interval: "2s" };
    },
    ["--profile", "bench"],
  );
  await stack.startProviderd({ FRED_LOG_LEVEL: "info" });
});

after(async () => {
  await stack.close();
});

async function killProviderd(): Promise<void> {
  logs.push(stack.providerd?.stderr() ?? "");
  await stack.killProviderd();
}

describe("faults: chaos (devnet + providerd + two mock backends, seeded SIGKILLs)", () => {
  it("converges after bursts, closes and kill -9 of providerd and a backend", async (t) => {
    t.diagnostic(`seed ${SEED}`);
    try {
      await chaos();
    } catch (err) {
      // Only the last providerd's log tail reaches the failure message: print what every
      // incarnation logged about the leases the failure names, so a CI log explains it.
      const named = new Set(String((err as Error).message).match(UUID_PATTERN) ?? []);
      const lines = [...logs, stack.providerd?.stderr() ?? ""]
        .flatMap((log, i) => log.split("\n").map((line) => `providerd #${i + 1}: ${line}`))
        .filter((line) => [...named].some((l) => line.includes(l)));
      console.error(
        `chaos (seed ${SEED}): what providerd logged about ${named.size} named leases\n${lines.slice(0, 300).join("\n")}`,
      );
      throw err;
    }
  });
});

const UUID_PATTERN = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

async function chaos(): Promise<void> {
  const random = seededRandom(SEED);
  const leases: string[] = [];
  const per = Math.ceil(LEASES / BURSTS);
  for (let burst = 0; burst < BURSTS; burst++) {
    leases.push(...(await stack.createLeases(Math.min(per, LEASES - leases.length), "docker-small")));
    // Close a few leases that are ACTIVE by now (the others may still be on their way).
    const picks = leases.filter(() => random() < 0.05);
    const states = await Promise.all(picks.map((l) => stack.leaseState(l)));
    const active = picks.filter((_, i) => states[i] === "LEASE_STATE_ACTIVE");
    if (active.length > 0) await stack.tenant.closeLeases(active, "chaos");
    const roll = random();
    if (roll < 0.35 && stack.providerd !== undefined) {
      await killProviderd();
      await stack.launchProviderd({ FRED_LOG_LEVEL: "info" });
    } else if (roll < 0.6) {
      await stack.mocks[0]!.kill();
      await stack.restartMock(0);
    }
  }
  // The last restart: both, then one sweep after it.
  await killProviderd();
  await stack.mocks[0]!.kill();
  await stack.restartMock(0);
  await stack.startProviderd({ FRED_LOG_LEVEL: "info" });
  const runs = await metric(stack, "fred_reconciler_runs_total", 'outcome="complete"');
  assert.ok(runs >= 1, "the startup sweep completed");
  await assertConverged(stack, leases, { timeoutMs: 120_000 });

  // One more lease, acknowledged by the last providerd with nothing killed: its log line
  // proves the lines read below are the ones providerd writes. (Acknowledgements made
  // during the chaos may all have been in flight when their providerd was killed.)
  const [last] = await stack.createLeases(1, "docker-small");
  await until(
    () => settledAcks(stack.providerd?.stderr() ?? "").has(last as string) || undefined,
    "the last lease's acknowledgement in providerd's log",
    60_000,
  );
  logs.push(stack.providerd?.stderr() ?? "");
  const acks = settledAcks(logs.join("\n"));
  const twice = [...acks].filter(([, txs]) => txs.size > 1).map(([l, txs]) => `${l}: ${[...txs]}`);
  assert.deepEqual(twice, [], `no lease acknowledged twice (seed ${SEED})`);
  assert.ok(acks.has(last as string), "acknowledgements were seen in the logs");
}

/** Distinct acknowledgement transactions per lease in providerd logs (a hash seen twice is one tx). */
function settledAcks(log: string): Map<string, Set<string>> {
  const acks = new Map<string, Set<string>>();
  for (const line of log.split("\n")) {
    // "already_done" (the lease was ACTIVE when asked again) is the adapter's idempotent
    // answer; only "acknowledged" is a transaction that acknowledged the lease.
    if (!line.includes('"lease settled on chain"') || !line.includes('"kind":"acknowledge"')) continue;
    if (!line.includes('"status":"acknowledged"')) continue;
    const { lease_uuid, tx_hash } = JSON.parse(line) as { lease_uuid: string; tx_hash: string };
    acks.set(lease_uuid, (acks.get(lease_uuid) ?? new Set()).add(tx_hash));
  }
  return acks;
}
