import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { hmacSecret, signRequest } from "../../../src/auth/hmac.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { until } from "../../support/index.ts";
import { TenantKey } from "../api/tenant-client.ts";
import { mockSkus, SECRETS, SIDS, Stack } from "./stack.ts";

/**
 * A lying backend cannot wedge a lease (issue #30, item 6), on real processes: the lease's
 * own backend sends a validly signed `deprovisioned` on the lease's lifecycle URL while the
 * chain says ACTIVE and the workload runs. providerd re-reads the chain and asks the
 * backend's own record before believing it: the placement keeps its lifecycle, the report
 * is counted as contradicted, and a restart is still admitted (202) with the workload
 * running. A placement an earlier build left without its lifecycle is repaired by the sweep.
 */
const stack = new Stack();
let tenant: TenantKey;

before(async () => {
  await stack.start(
    (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_DELAY: "0s" }],
    (s) => {
      tenant = new TenantKey(s.account("tenant1").private_key_hex);
      s.extraConfig = { token_tracker_db_path: `${s.dir}/tokens.db` };
    },
  );
  await stack.startProviderd();
});

after(() => stack.close());

function placement(lease: string) {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return s.placements.placement(lease);
  } finally {
    s.close();
  }
}

/** A callback signed with mock-1's key on `query`, as its outbox sender would send it. */
async function signedCallback(query: string, body: Record<string, unknown>): Promise<number> {
  const uri = `/callbacks/provision?${query}`;
  const raw = JSON.stringify(body);
  const signature = signRequest(hmacSecret(SECRETS[0]!), {
    method: "POST",
    uri,
    body: raw,
    timestamp: Math.floor(Date.now() / 1000),
  });
  const res = await fetch(`${stack.api}${uri}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-fred-signature": signature },
    body: raw,
  });
  await res.arrayBuffer();
  return res.status;
}

async function contradicted(): Promise<number> {
  const text = await (await fetch(`${stack.api}/metrics`)).text();
  const m = /fred_callbacks_contradicted_total\{backend="mock-1"\} (\d+)/.exec(text);
  return m === null ? 0 : Number(m[1]);
}

describe("a lying deprovisioned callback (devnet + providerd + mock backend)", () => {
  it("keeps the lifecycle of an ACTIVE running lease; a restart is still admitted", async () => {
    const [lease] = (await stack.createLeases(1, "docker-small")) as [string];
    await stack.waitState([lease], "LEASE_STATE_ACTIVE");
    const before = placement(lease);
    assert.equal(before?.owner, "mock-1");
    assert.ok(before?.lifecycleId !== undefined, "the placement has a lifecycle id");

    const status = await signedCallback(`lifecycle_id=${before.lifecycleId}`, {
      lease_uuid: lease,
      status: "deprovisioned",
      error: "",
      backend_storage_id: SIDS[0],
    });
    assert.equal(status, 200, "the backend is answered");
    assert.deepEqual(placement(lease), before, "the placement and its lifecycle are kept");
    assert.equal(await contradicted(), 1, "the contradicted report is counted");
    assert.equal(await stack.leaseState(lease), "LEASE_STATE_ACTIVE");

    const res = await fetch(`${stack.api}/v1/leases/${lease}/restart`, {
      method: "POST",
      headers: { authorization: `Bearer ${tenant.fresh(lease)}`, "idempotency-key": randomUUID() },
    });
    assert.equal(res.status, 202, await res.text());
    await until(async () => {
      const w = await stack.workloads([lease]);
      return w.length === 1 && w[0]!.status === "ready";
    }, "the workload runs after the restart");
  });

  it("a placement left without its lifecycle while the lease runs is repaired by the sweep", async () => {
    const [lease] = (await stack.createLeases(1, "docker-small")) as [string];
    await stack.waitState([lease], "LEASE_STATE_ACTIVE");
    const lifecycleId = placement(lease)?.lifecycleId;
    assert.ok(lifecycleId !== undefined);
    // The wedge as an unchecked teardown report left it: the record retired, then adopted
    // back by a sweep from the owner's inventory, with no lifecycle id.
    assert.equal(await stack.stopProviderd(), 0);
    const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid);
    try {
      assert.ok(s.placements.retirePlacement(lease, "mock-1"));
      s.placements.adoptPlacement(lease, "mock-1", Date.now());
      await s.durable();
    } finally {
      s.close();
    }
    assert.equal(placement(lease)?.lifecycleId, undefined);
    await stack.startProviderd();
    await until(() => placement(lease)?.lifecycleId === lifecycleId, "the sweep restores the lifecycle id", {
      context: () => stack.providerd?.logTail() ?? "",
    });
    const res = await fetch(`${stack.api}/v1/leases/${lease}/restart`, {
      method: "POST",
      headers: { authorization: `Bearer ${tenant.fresh(lease)}`, "idempotency-key": randomUUID() },
    });
    assert.equal(res.status, 202, await res.text());
  });

  it("bad input: a deprovisioned on an unknown lifecycle id changes nothing and counts nothing", async () => {
    const [lease] = (await stack.createLeases(1, "docker-small")) as [string];
    await stack.waitState([lease], "LEASE_STATE_ACTIVE");
    const before = placement(lease);
    const counted = await contradicted();
    const status = await signedCallback(`lifecycle_id=${randomUUID()}`, {
      lease_uuid: lease,
      status: "deprovisioned",
      error: "",
      backend_storage_id: SIDS[0],
    });
    assert.equal(status, 200);
    assert.deepEqual(placement(lease), before);
    assert.equal(await contradicted(), counted);
  });
});
