import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { MsgCancelLease } from "../../src/chain/proto/index.ts";
import { newUuidV4 } from "../../src/core/uuid.ts";
import { signedClient } from "../backend/kit/signed-client.ts";
import { SECRETS, Stack } from "../provider/e2e/stack.ts";
import { until } from "../support/index.ts";
import { assertConverged, inventories, metric, withStore } from "./fleet.ts";

/**
 * Faults of the event path, with real processes (devnet, two mock backends, providerd
 * sweeping every 2 s): what providerd missed while down, a close that races its provision,
 * workloads a backend runs for leases providerd never placed, and a lost `deprovisioned`
 * callback. mock-1 serves docker-small at once; mock-2 serves docker-medium and takes 8 s
 * per provision, so a lease stays in flight there long enough to be cancelled. One stack
 * for the file: each case makes its own leases and ends with the fleet check.
 */
const stack = new Stack();
const ACTIVE = "LEASE_STATE_ACTIVE";

before(async () => {
  await stack.start(
    (): Record<string, string>[] => [{}, { MOCK_BACKEND_DELAY: "8s" }],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-medium")] }];
      s.extraConfig = { reconciliation_interval: "2s" };
    },
  );
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

const mock = (i: number) => signedClient(stack.mocks[i]!.ready.url, SECRETS[i]!);

async function cancel(lease: string): Promise<void> {
  const msg = MsgCancelLease.fromPartial({ tenant: stack.tenant.address, leaseUuids: [lease] });
  await stack.tenant.send([{ typeUrl: MsgCancelLease.typeUrl, value: msg }]);
}

/** Provisions `lease` on mock-1 directly, as nobody in providerd asked (an orphan in the making). */
async function provisionBehindProviderd(lease: string): Promise<void> {
  const res = await mock(0).post("/provision", {
    lease_uuid: lease,
    tenant: stack.tenant.address,
    provider_uuid: stack.keys.provider_uuid,
    items: [{ sku: stack.sku("docker-small"), quantity: 1 }],
    callback_url: `${stack.api}/callbacks/provision?operation_id=${newUuidV4()}`,
  });
  assert.equal(res.status, 202, res.text);
  await until(
    async () => (await inventories(stack)).get("mock-1")?.some((p) => p.leaseUuid === lease),
    "the workload on mock-1",
  );
}

describe("faults: missed events (devnet + providerd + two mock backends)", () => {
  it("lease_created missed: leases created while providerd was down are provisioned after the restart", async () => {
    await stack.stopProviderd();
    const leases = await stack.createLeases(3, "docker-small");
    await stack.startProviderd();
    await stack.waitState(leases, ACTIVE);
    await assertConverged(stack, leases);
  });

  it("lease_closed missed: a lease closed while providerd was down loses its workload, its neighbour keeps its own", async () => {
    const [closed, kept] = await stack.createLeases(2, "docker-small");
    await stack.waitState([closed!, kept!], ACTIVE);
    await stack.stopProviderd();
    assert.equal((await stack.tenant.closeLeases([closed!], "done"))[0]?.status, "closed");
    await stack.startProviderd();
    await assertConverged(stack, [closed!, kept!]);
    assert.equal(await stack.leaseState(kept!), ACTIVE);
  });

  it("a lease cancelled while its provision is in flight ends with no workload and no attempt", async () => {
    const [lease] = await stack.createLeases(1, "docker-medium");
    await until(
      () => withStore(stack, (s) => s.placements.attemptFor(lease!)) !== undefined,
      "the write-ahead attempt on mock-2",
      { context: () => stack.providerd?.logTail() ?? "" },
    );
    await cancel(lease!);
    assert.equal(await stack.leaseState(lease!), "LEASE_STATE_REJECTED");
    await assertConverged(stack, [lease!]);
  });

  it("orphans: a closed lease's workload is torn down; one whose lease the chain does not know is kept", async () => {
    await stack.stopProviderd();
    const [ended] = await stack.createLeases(1, "docker-small");
    await cancel(ended!);
    const unknown = newUuidV4();
    await provisionBehindProviderd(ended!);
    await provisionBehindProviderd(unknown);
    const notFoundSkips = () =>
      metric(stack, "fred_reconciler_cleanup_skips_total", 'pass="orphan",reason="reread_not_found"');
    await stack.startProviderd();
    await assertConverged(stack, [ended!]);
    // Not found on chain proves nothing: the sweep's re-read refused it, and it still runs.
    await until(async () => (await notFoundSkips()) > 0, "a not-found re-read counted as a skip");
    assert.ok((await inventories(stack)).get("mock-1")?.some((p) => p.leaseUuid === unknown));
    assert.equal(
      withStore(stack, (s) => s.placements.placement(unknown)),
      undefined,
      "never adopted",
    );
    assert.equal(
      await mock(0)
        .post("/deprovision", { lease_uuid: unknown })
        .then((r) => r.status),
      200,
    );
  });

  it("a lost `deprovisioned` callback: the sweep prunes the ended lease's placement instead", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], ACTIVE);
    await stack.stopProviderd();
    assert.equal((await stack.tenant.closeLeases([lease!], "done"))[0]?.status, "closed");
    // Torn down behind providerd's back; then the callbacks telling it so are lost.
    assert.equal((await mock(0).post("/deprovision", { lease_uuid: lease })).status, 200);
    await until(
      async () => !(await inventories(stack)).get("mock-1")?.some((p) => p.leaseUuid === lease),
      "the workload gone from mock-1",
    );
    await stack.stopMock(0);
    const journal = new Database(stack.mockEnvs[0]!.MOCK_BACKEND_DB_PATH!);
    const lost = journal.prepare("DELETE FROM outbox WHERE lease_uuid = ?").run(lease!).changes;
    journal.close();
    await stack.restartMock(0);
    assert.ok(
      withStore(stack, (s) => s.placements.placement(lease!)) !== undefined,
      "the placement outlived it",
    );

    await stack.startProviderd();
    await until(
      () => withStore(stack, (s) => s.placements.placement(lease!)) === undefined,
      "the ended lease's placement pruned",
      { timeoutMs: 60_000, intervalMs: 200, context: () => `${lost} callbacks lost` },
    );
    assert.ok(
      (await metric(stack, "fred_reconciler_actions_total", 'action="placement_prune_candidate"')) >= 1,
    );
    await assertConverged(stack, [lease!]);
  });
});
