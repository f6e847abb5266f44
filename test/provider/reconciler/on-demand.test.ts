import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { runFred, until } from "../../support/index.ts";
import { SECRETS, Stack } from "../e2e/stack.ts";
import { backendInventory } from "./inventory.ts";

/**
 * The operator's on-demand sweep: with reconciliation_interval at an hour, a workload lost
 * after startup stays failed until SIGUSR1 asks providerd for a sweep, which provisions it
 * again on its owner (devnet + one mock backend + providerd, real processes). `fred
 * providerd reconcile` asks for one over the daemon's 0600 unix socket and prints its result.
 */
const stack = new Stack();

before(async () => {
  await stack.start(
    () => [{}],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }];
      s.extraConfig = { reconciliation_interval: "1h" };
    },
  );
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

const inventory = () => backendInventory(stack);

function lifecycleId(lease: string): string | undefined {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return s.placements.placement(lease)?.lifecycleId;
  } finally {
    s.close();
  }
}

async function sweeps(): Promise<number> {
  const text = await (await fetch(`${stack.api}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("fred_reconciler_runs_total{"))
    .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
}

describe("fred providerd: SIGUSR1 runs a reconciler sweep now", () => {
  it("a lost workload is re-provisioned on the sweep the signal asks for", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    const first = lifecycleId(lease!);
    const lost = await signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!).post(
      `/_mock/lose/${lease}`,
      undefined,
    );
    assert.ok(lost.status >= 200 && lost.status < 300, `lose answered ${lost.status}`);
    await until(
      async () => (await inventory()).find((p) => p.leaseUuid === lease)?.status === "failed",
      "the mock reports the workload failed",
      { intervalMs: 100 },
    );
    const before = await sweeps();
    assert.equal(lifecycleId(lease!), first, "no sweep has repaired it yet");

    stack.providerd!.signal("SIGUSR1");
    await until(
      async () =>
        (await inventory()).find((p) => p.leaseUuid === lease)?.status === "ready" &&
        lifecycleId(lease!) !== first,
      "the lease provisioned again under a new operation",
      { timeoutMs: 60_000, intervalMs: 200, context: () => stack.providerd?.logTail() ?? "" },
    );
    assert.ok((await sweeps()) > before, "a sweep ran");
  });

  it("`fred providerd reconcile` runs a sweep over the 0600 socket and prints its result", async () => {
    const socket = join(dirname(stack.placementPath), "providerd.sock");
    assert.equal(statSync(socket).mode & 0o777, 0o600, "only the daemon's user may ask");
    const before = await sweeps();
    const out = await runFred(["providerd", "reconcile", "-c", stack.configPath]);
    assert.equal(out.code, 0, out.stderr);
    const report = JSON.parse(out.stdout) as { outcome: string; answered: string[]; actions: number };
    assert.deepEqual(
      { ...report, actions: typeof report.actions },
      {
        outcome: "complete",
        answered: ["mock-1"],
        actions: "number",
      },
    );
    assert.ok((await sweeps()) > before, "a sweep ran");

    // Not running: a clear error, exit 1.
    const none = await runFred(["providerd", "reconcile", "-c", stack.configPath], {
      env: { PROVIDER_PLACEMENT_STORE_DB_PATH: join(stack.dir, "elsewhere", "placements.db") },
    });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /cannot reach providerd at .*providerd\.sock/);
  });
});
