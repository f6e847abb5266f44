import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { MsgCancelLease } from "../../../src/chain/proto/index.ts";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import { BackendClient, type ProvisionEntry } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { until } from "../../support/index.ts";
import { SECRETS, SIDS, Stack } from "./stack.ts";

/**
 * Unresolved attempts of leases that ended, with real processes (devnet, two mock
 * backends, providerd). mock-1 drains, so new leases go to mock-2, whose provisions take
 * 30 s: a lease stays "provisioning" there long enough for its tenant to cancel it. A
 * PENDING lease cannot be closed (MsgCloseLease needs ACTIVE); cancelling it makes it
 * REJECTED, which raises no event providerd subscribes to, so the restart's recovery pass
 * is what finds it.
 */
const stack = new Stack();
const REJECTED = "LEASE_STATE_REJECTED";

before(async () => {
  await stack.start(
    (): Record<string, string>[] => [{}, { MOCK_BACKEND_DELAY: "30s" }],
    (s) => {
      const small = s.sku("docker-small");
      s.backendOverrides = [{ skus: [small], draining: true }, { skus: [small] }];
    },
  );
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

/** Reads the store beside providerd; `writer` only while providerd is stopped. */
function withStore<T>(fn: (s: PlacementStore) => T, writer = false): T {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: !writer });
  try {
    return fn(s);
  } finally {
    s.close();
  }
}

async function entriesOn(i: number, lease: string): Promise<ProvisionEntry[]> {
  const config = parseProviderConfig(readFileSync(stack.configPath, "utf8"));
  const client = await BackendClient.create({
    backend: config.backends[i]!,
    secret: SECRETS[i]!,
    storageId: SIDS[i],
  });
  try {
    return await client.provisionsFor([lease]);
  } finally {
    await client.close();
  }
}

async function cancel(lease: string): Promise<void> {
  const msg = MsgCancelLease.fromPartial({ tenant: stack.tenant.address, leaseUuids: [lease] });
  await stack.tenant.send([{ typeUrl: MsgCancelLease.typeUrl, value: msg }]);
  assert.equal(await stack.leaseState(lease), REJECTED);
}

describe("providerd retires unresolved attempts of leases that ended (devnet + providerd + mock backends)", () => {
  it("a lease cancelled while provisioning, and one never sent, are deprovisioned and their attempts retired", async () => {
    const [provisioning] = (await stack.createLeases(1, "docker-small")) as [string];
    const attempt = await until(
      () => withStore((s) => s.placements.attemptFor(provisioning)),
      "the attempt of the new lease",
    );
    assert.equal(attempt.backend, "mock-2");
    await until(
      async () => (await entriesOn(1, provisioning))[0]?.status === "provisioning",
      "mock-2 provisioning the lease",
    );

    assert.equal(await stack.stopProviderd(), 0);
    await cancel(provisioning);
    // What a providerd killed between the attempt commit and the backend call leaves behind,
    // for a lease that then ended: only mock-1 could ever have received it.
    const [neverSent] = (await stack.createLeases(1, "docker-small")) as [string];
    await cancel(neverSent);
    withStore(
      (s) =>
        s.placements.recordAttempt({
          leaseUuid: neverSent,
          backend: "mock-1",
          operationId: newUuidV4(),
          kind: "provision",
          createdAt: Date.now(),
        }),
      true,
    );

    await stack.startProviderd();
    await until(
      () =>
        withStore(
          (s) =>
            [provisioning, neverSent].every((l) => s.placements.attemptFor(l) === undefined) &&
            s.placements.placement(provisioning) === undefined,
        ),
      "both attempts retired",
    );
    // The deprovision stopped the slow provision instead of letting it finish for nobody.
    await until(
      async () => (await entriesOn(1, provisioning)).length === 0,
      "mock-2 no longer lists the cancelled lease",
    );
    assert.deepEqual(await entriesOn(0, neverSent), [], "mock-1 never provisioned the other one");
    withStore((s) => {
      assert.deepEqual(s.placements.unresolvedAttempts(), []);
      assert.deepEqual(s.placements.placements(), [], "no placement was confirmed for either lease");
    });
    assert.equal(await stack.leaseState(provisioning), REJECTED);
    assert.equal(await stack.leaseState(neverSent), REJECTED);
  });
});
