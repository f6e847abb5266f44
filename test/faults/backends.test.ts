import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { signedClient } from "../backend/kit/signed-client.ts";
import { SECRETS, Stack } from "../provider/e2e/stack.ts";
import { until } from "../support/index.ts";
import { assertConverged, inventories, logged, metric, withStore } from "./fleet.ts";

/**
 * Backend faults, with real processes (devnet, three mock backends, providerd sweeping
 * every 2 s). mock-1 serves docker-small, mock-2 docker-medium, mock-3 docker-large, so
 * each lease's owner is known. A workload lost behind its backend's back is provisioned
 * again on its owner; while mock-3 hangs (its port accepts connections and never answers)
 * every sweep abandons its inventory read at the sweep's deadline (the typed
 * ERR_RECONCILE_DEADLINE in providerd's log, not a wall-time measurement), defers only the
 * lease placed there, and repairs the others; once mock-3 is back the fleet converges.
 */
const stack = new Stack();
const ACTIVE = "LEASE_STATE_ACTIVE";

before(async () => {
  await stack.start(
    () => [{}, {}, {}],
    (s) => {
      s.backendOverrides = [
        { skus: [s.sku("docker-small")] },
        { skus: [s.sku("docker-medium")] },
        { skus: [s.sku("docker-large")] },
      ];
      s.extraConfig = { reconciliation_interval: "2s" };
    },
  );
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

async function lose(i: number, lease: string): Promise<void> {
  const res = await signedClient(stack.mocks[i]!.ready.url, SECRETS[i]!).post(
    `/_mock/lose/${lease}`,
    undefined,
  );
  assert.equal(res.status, 200, res.text);
}

/** A listener on `port` that accepts connections and never answers on them. */
async function hangOn(port: number): Promise<{ server: Server; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe("faults: backends (devnet + providerd + three mock backends)", () => {
  it("a backend loses an ACTIVE workload: provisioned again on its owner, never moved", async () => {
    const [lease] = await stack.createLeases(1, "docker-medium");
    await stack.waitState([lease!], ACTIVE);
    const first = withStore(stack, (s) => s.placements.placement(lease!));
    assert.equal(first?.owner, "mock-2");
    await lose(1, lease!);
    await until(
      () => withStore(stack, (s) => s.placements.placement(lease!)?.lifecycleId) !== first?.lifecycleId,
      "the lease confirmed again under a new operation",
      { timeoutMs: 60_000, intervalMs: 200, context: () => stack.providerd?.logTail() ?? "" },
    );
    await assertConverged(stack, [lease!]);
    assert.equal(withStore(stack, (s) => s.placements.placement(lease!))?.owner, "mock-2");
  });

  it("one of three backends hangs: its read is abandoned at the deadline, only its lease is deferred", async () => {
    const [small, large] = [
      ...(await stack.createLeases(1, "docker-small")),
      ...(await stack.createLeases(1, "docker-large")),
    ];
    await stack.waitState([small!, large!], ACTIVE);
    assert.equal(withStore(stack, (s) => s.placements.placement(large!))?.owner, "mock-3");
    const port = Number(new URL(stack.mocks[2]!.ready.url).port);
    await stack.stopMock(2);
    const hang = await hangOn(port);
    try {
      const before = await metric(stack, "fred_reconciler_runs_total", 'outcome="degraded"');
      await lose(0, small!);
      // The other backends' leases are repaired while mock-3 stays silent.
      await assertConverged(stack, [small!], { silent: ["mock-3"] });
      await until(
        () =>
          logged(stack, "reconciler: backend inventory unavailable").some(
            (l) => l.backend === "mock-3" && (l.err as { code?: string })?.code === "ERR_RECONCILE_DEADLINE",
          ),
        "a sweep abandoning mock-3's inventory read at its deadline",
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      assert.ok((await metric(stack, "fred_reconciler_runs_total", 'outcome="degraded"')) > before);
      // Deferred: the silent owner's lease keeps its placement and is never tried elsewhere.
      const p = withStore(stack, (s) => ({
        placement: s.placements.placement(large!),
        attempt: s.placements.attemptFor(large!),
      }));
      assert.equal(p.placement?.owner, "mock-3");
      assert.equal(p.attempt, undefined);
      const elsewhere = [...(await inventories(stack))].filter(([, rows]) =>
        rows.some((r) => r.leaseUuid === large),
      );
      assert.deepEqual(elsewhere, [], "no copy on another backend");
    } finally {
      await hang.close();
    }
    await stack.restartMock(2);
    await assertConverged(stack, [small!, large!]);
  });
});
