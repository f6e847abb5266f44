import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { runFred } from "../../support/index.ts";
import { Stack } from "../e2e/stack.ts";

/**
 * `fred placement repair` on a manufactured conflict: the lease runs on mock-1, but its
 * record names mock-1 and mock-2 as candidates. The dry run shows the evidence; --apply
 * resolves it only once mock-2 has answered a complete inventory without the lease.
 */
const stack = new Stack();

before(async () => {
  await stack.start();
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

interface Repair {
  ok: boolean;
  backup: string | null;
  findings: { kind: string; lease_uuid: string; evidence: Record<string, string>; resolution: unknown }[];
  resolved: string[];
}

async function repair(...args: string[]): Promise<Repair> {
  const r = await runFred(["placement", "repair", "--config", stack.configPath, ...args]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Repair;
}

function withStore<T>(fn: (s: PlacementStore) => T, readonly = true): T {
  const store = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly });
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

describe("fred placement repair", () => {
  it("shows a conflict with its evidence and resolves it only after the other candidate reports absence", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    await stack.stopProviderd();
    withStore((s) => s.placements.quarantine(lease!, ["mock-1", "mock-2"], Date.now()), false);

    await stack.stopMock(1);
    try {
      const dry = await repair();
      assert.deepEqual(dry.findings, [
        {
          kind: "conflict",
          lease_uuid: lease,
          backends: ["mock-1", "mock-2"],
          evidence: { "mock-1": "reports", "mock-2": "unreachable" },
        },
      ]);
      // mock-2's silence proves nothing: --apply changes nothing and writes no backup.
      const blocked = await repair("--apply");
      assert.deepEqual([blocked.resolved, blocked.backup], [[], null]);
      assert.equal(
        withStore((s) => s.placements.placement(lease!)?.state),
        "conflict",
      );
    } finally {
      await stack.restartMock(1);
    }

    const dry = await repair();
    assert.deepEqual(dry.findings[0]?.evidence, { "mock-1": "reports", "mock-2": "absent" });
    assert.deepEqual(dry.findings[0]?.resolution, { adopt: "mock-1" });
    assert.equal(
      withStore((s) => s.placements.placement(lease!)?.state),
      "conflict",
      "a dry run changes nothing",
    );
    const applied = await repair("--apply");
    assert.deepEqual(applied.resolved, [lease]);
    assert.ok(applied.backup?.includes("placements.db.backup-"));
    const p = withStore((s) => s.placements.placement(lease!));
    assert.deepEqual([p?.state, p?.owner], ["confirmed", "mock-1"]);
    assert.deepEqual((await repair()).findings, []);
    await stack.startProviderd();
  });
});
