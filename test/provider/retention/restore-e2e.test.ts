import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { openCosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../../../src/chain/cosmos/signer.ts";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../../src/chain/proto/index.ts";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { metric, withStore } from "../../faults/fleet.ts";
import { until } from "../../support/index.ts";
import { TenantKey } from "../api/tenant-client.ts";
import { WsClient } from "../api/ws-client.ts";
import { SECRETS, Stack, sha256 } from "../e2e/stack.ts";

/**
 * Retention and restore through real processes: a devnet, two mock backends keeping closed
 * leases' data in their journals (MOCK_BACKEND_RETAIN_ON_CLOSE=1; mock-2 expires retained
 * data after two seconds) and providerd. Closing a lease retains its data (status says
 * retained, the event stream pushes a `retained` frame); the data is restored into a new
 * lease on a larger tier (ACTIVE on chain, the source's row retired); a demote whose data
 * does not fit is refused 422; another tenant's restore of it answers 404; a retained row
 * survives sweeps while its owner lists it and is retired after two complete sweeps
 * without it.
 */
const stack = new Stack();
const MANIFEST = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
const HASH = sha256(MANIFEST);
const HASH_HEX = Buffer.from(HASH).toString("hex");
const tier = (disk_mb: number) => ({ cpu_cores: 0.5, memory_mb: 256, disk_mb });
let tenant1: TenantKey;
let tenant2: TenantKey;
const context = () => stack.providerd?.logTail() ?? "";

before(async () => {
  await stack.start(
    (s): Record<string, string>[] => [
      {
        MOCK_BACKEND_RETAIN_ON_CLOSE: "1",
        MOCK_BACKEND_SKUS: JSON.stringify({
          [s.sku("docker-small")]: tier(512),
          [s.sku("docker-medium")]: tier(1024),
          [s.sku("docker-large")]: tier(2048),
        }),
      },
      {
        MOCK_BACKEND_RETAIN_ON_CLOSE: "1",
        MOCK_BACKEND_RETENTION_MAX_AGE: "2s",
        MOCK_BACKEND_RETENTION_REAP_INTERVAL: "1s",
        MOCK_BACKEND_SKUS: JSON.stringify({ [s.sku("docker-small")]: tier(512) }),
      },
    ],
    (s) => {
      // Small leases run on mock-2; mock-1 still knows the small tier (a demote restores there).
      s.backendOverrides = [
        { skus: [s.sku("docker-medium"), s.sku("docker-large")] },
        { skus: [s.sku("docker-small")] },
      ];
      s.extraConfig = { reconciliation_interval: "1h" };
    },
  );
  tenant1 = new TenantKey(stack.account("tenant1").private_key_hex);
  tenant2 = new TenantKey(stack.account("tenant2").private_key_hex);
  await stack.startProviderd({ FRED_LOG_LEVEL: "info" });
});

after(async () => {
  await stack.close();
});

async function upload(lease: string): Promise<void> {
  const res = await fetch(`${stack.api}/v1/leases/${lease}/data`, {
    method: "POST",
    body: MANIFEST,
    headers: { authorization: `Bearer ${tenant1.payload(lease, HASH_HEX)}` },
  });
  assert.equal(res.status, 202, await res.text());
}

async function status(lease: string, key = tenant1): Promise<Record<string, unknown>> {
  const res = await fetch(`${stack.api}/v1/leases/${lease}/status`, {
    headers: { authorization: `Bearer ${key.fresh(lease)}` },
  });
  return (await res.json()) as Record<string, unknown>;
}

async function restore(
  target: string,
  from: string,
  key = tenant1,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${stack.api}/v1/leases/${target}/restore`, {
    method: "POST",
    body: JSON.stringify({ from_lease_uuid: from }),
    headers: { authorization: `Bearer ${key.fresh(target)}`, "content-type": "application/json" },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A running lease of tenant1 on `sku`, closed on chain, with its data retained. */
async function retainedLease(sku: string, sizeMb?: number): Promise<string> {
  const [lease] = await stack.createLeases(1, sku, HASH);
  await upload(lease!);
  await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
  if (sizeMb !== undefined) {
    const r = await signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!).post(
      `/_mock/retained-size/${lease}`,
      { disk_mb: sizeMb },
    );
    assert.equal(r.status, 200);
  }
  await stack.tenant.closeLeases([lease!], "done for now");
  await until(async () => (await status(lease!)).provision_status === "retained", "the data is retained", {
    context,
  });
  return lease!;
}

const sweep = async () => {
  const before = await metric(stack, "fred_reconciler_runs_total", 'outcome="complete"');
  stack.providerd!.signal("SIGUSR1");
  await until(
    async () => (await metric(stack, "fred_reconciler_runs_total", 'outcome="complete"')) > before,
    "a complete sweep",
    { context },
  );
};

describe("retention and restore (devnet + mock backends + providerd)", () => {
  it("a close with retain: status shows retained, the stream pushes retained, the row is kept", async () => {
    const [lease] = await stack.createLeases(1, "docker-medium", HASH);
    await upload(lease!);
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    const ws = await new WsClient(
      `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/events?token=${tenant1.fresh(lease!)}`,
    ).open();
    try {
      await ws.frame(1);
      await stack.tenant.closeLeases([lease!], "done for now");
      await until(async () => ws.frames.some((f) => f.status === "retained"), "a retained frame", {
        context,
      });
      const frame = ws.frames.find((f) => f.status === "retained")!;
      assert.match(String(frame.error), /restore/);
    } finally {
      ws.ws.close();
      await ws.closed;
    }
    // The chain read behind status is reused for up to a second: wait for the close to show.
    await until(async () => (await status(lease!)).state === "LEASE_STATE_CLOSED", "status reads CLOSED");
    const s = await status(lease!);
    assert.equal(s.provision_status, "retained");
    assert.ok(Array.isArray(s.items) && s.items.length === 1, JSON.stringify(s));
    const rec = withStore(stack, (st) => st.placements.retained.get(lease!));
    assert.equal(rec?.owner, "mock-1");
    // A complete sweep with mock-1 listing it: the row stays, with no miss counted.
    await sweep();
    assert.equal(
      withStore(stack, (st) => st.placements.retained.get(lease!)?.misses),
      0,
    );
  });

  it("restores into a new lease on a larger tier: ACTIVE on chain, the source row retired", async () => {
    const source = await retainedLease("docker-medium");
    const [target] = await stack.createLeases(1, "docker-large", HASH);
    const r = await restore(target!, source);
    assert.deepEqual(r, { status: 202, body: { status: "provisioning" } });
    await stack.waitState([target!], "LEASE_STATE_ACTIVE");
    await until(
      () => withStore(stack, (s) => s.placements.placement(source)) === undefined,
      "the source row retired",
      {
        context,
      },
    );
    assert.equal(
      withStore(stack, (s) => s.placements.placement(target!)?.owner),
      "mock-1",
    );
    // The data now belongs to the target: restoring it again finds nothing.
    const [again] = await stack.createLeases(1, "docker-medium", HASH);
    assert.equal((await restore(again!, source)).status, 404);
  });

  it("restores on the same tier too", async () => {
    const source = await retainedLease("docker-medium");
    const [target] = await stack.createLeases(1, "docker-medium", HASH);
    assert.equal((await restore(target!, source)).status, 202);
    await stack.waitState([target!], "LEASE_STATE_ACTIVE");
  });

  it("a demote whose data does not fit is refused 422, and the data stays restorable", async () => {
    const source = await retainedLease("docker-medium", 900);
    const [small] = await stack.createLeases(1, "docker-small", HASH);
    const r = await restore(small!, source);
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.match(String(r.body.error), /^retained data exceeds the requested smaller tier/);
    assert.equal(await stack.leaseState(small!), "LEASE_STATE_PENDING", "the target is not rejected");
    assert.equal(
      withStore(stack, (s) => s.placements.retained.get(source)?.restoreTarget),
      undefined,
    );
    const [large] = await stack.createLeases(1, "docker-large", HASH);
    assert.equal((await restore(large!, source)).status, 202);
    await stack.waitState([large!], "LEASE_STATE_ACTIVE");
  });

  it("another tenant's restore of the data answers 404; a target that is not PENDING 409", async () => {
    const source = await retainedLease("docker-medium");
    const chain2 = await openCosmosChain({
      rpcUrl: stack.devnet.rpc,
      signer: signerFromKey(Buffer.from(stack.account("tenant2").private_key_hex, "hex")),
      txPollIntervalMs: 50,
      txTimeoutMs: 20_000,
    });
    try {
      const res = await chain2.send([
        {
          typeUrl: MsgCreateLease.typeUrl,
          value: MsgCreateLease.fromPartial({
            tenant: chain2.address,
            items: [{ skuUuid: stack.sku("docker-large"), quantity: 1n }],
            metaHash: HASH,
          }),
        },
      ]);
      const theirs = MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
      const cross = await restore(theirs, source, tenant2);
      assert.equal(cross.status, 404, JSON.stringify(cross.body));
      assert.equal(
        withStore(stack, (s) => s.placements.attemptFor(theirs)),
        undefined,
      );
    } finally {
      chain2.disconnect();
    }
    const [active] = await stack.createLeases(1, "docker-medium");
    await stack.waitState([active!], "LEASE_STATE_ACTIVE");
    const notPending = await restore(active!, source);
    assert.equal(notPending.status, 409);
    assert.equal(notPending.body.reason, "target_not_pending");
    // Still restorable by its owner.
    const [mine] = await stack.createLeases(1, "docker-medium", HASH);
    assert.equal((await restore(mine!, source)).status, 202);
    await stack.waitState([mine!], "LEASE_STATE_ACTIVE");
    const [second] = await stack.createLeases(1, "docker-medium", HASH);
    assert.equal(
      (await restore(second!, source)).status,
      404,
      "the data was adopted: nothing left to restore",
    );
  });

  it("a retained row is retired after two complete sweeps whose owner /retentions lack it", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    await stack.tenant.closeLeases([lease!], "done for now");
    await until(
      () => withStore(stack, (s) => s.placements.retained.get(lease!)) !== undefined,
      "the row is retained",
      {
        context,
      },
    );
    const mock2 = signedClient(stack.mocks[1]!.ready.url, SECRETS[1]!);
    // mock-2 reaps retained data two seconds after the close.
    await until(
      async () => !(await mock2.get("/retentions")).text.includes(lease!),
      "mock-2 no longer retains the lease",
      { timeoutMs: 30_000 },
    );
    await sweep();
    assert.equal(
      withStore(stack, (s) => s.placements.retained.get(lease!)?.misses),
      1,
      "one miss: kept",
    );
    await sweep();
    assert.equal(
      withStore(stack, (s) => s.placements.placement(lease!)),
      undefined,
      "retired",
    );
  });
});
