import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { PayloadStore } from "../../../src/provider/store/index.ts";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { logged, withStore } from "../../faults/fleet.ts";
import { until } from "../../support/index.ts";
import { SECRETS, Stack, sha256 } from "../e2e/stack.ts";
import { backendInventory } from "./inventory.ts";

/**
 * The missing payload rebuild (devnet, one mock backend, providerd sweeping every 2 s): a
 * payload lease runs on mock-1; its row in providerd's payload store is lost while
 * providerd is down; then its workload is lost too. The sweep that must provision it again
 * rebuilds the payload from mock-1's latest active release (GET /releases/{uuid}
 * `manifest`), checks it against the lease's meta_hash, provisions with it and stores it
 * again.
 */
const stack = new Stack();
const MANIFEST = Buffer.from(
  JSON.stringify({ image: "docker.io/library/nginx:1.27", ports: { "80/tcp": {} } }),
);

before(async () => {
  await stack.start(
    () => [{}],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }];
      s.extraConfig = { reconciliation_interval: "2s" };
    },
  );
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

async function payloads<T>(fn: (p: PayloadStore) => Promise<T>): Promise<T> {
  const p = PayloadStore.open(stack.payloadPath);
  try {
    return await fn(p);
  } finally {
    p.close();
  }
}

describe("reconciler: a payload lost from the payload store", () => {
  it("is rebuilt from the owner's latest active release, verified against meta_hash", async () => {
    const [lease] = await stack.createLeases(1, "docker-small", sha256(MANIFEST));
    assert.equal(await payloads((p) => p.put(lease!, MANIFEST, Date.now())), "stored");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    const first = withStore(stack, (s) => s.placements.placement(lease!)?.lifecycleId);

    await stack.stopProviderd();
    assert.equal(await payloads((p) => p.delete(lease!)), true, "the payload row is gone");
    await stack.startProviderd();
    const lost = await signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!).post(
      `/_mock/lose/${lease}`,
      undefined,
    );
    assert.equal(lost.status, 200, lost.text);

    await until(
      () => withStore(stack, (s) => s.placements.placement(lease!)?.lifecycleId) !== first,
      "the lease provisioned again under a new operation",
      { timeoutMs: 60_000, intervalMs: 200, context: () => stack.providerd?.logTail() ?? "" },
    );
    await until(
      async () => (await backendInventory(stack)).find((p) => p.leaseUuid === lease)?.status === "ready",
      "the re-provisioned workload ready",
    );
    assert.ok(logged(stack, "payload rebuilt from the owner's latest active release").length > 0);
    const again = await payloads((p) => p.get(lease!));
    assert.equal(again?.sha256, Buffer.from(sha256(MANIFEST)).toString("hex"), "stored again, verified");
    assert.deepEqual(again?.payload, MANIFEST);
  });
});
