import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../../src/chain/proto/index.ts";
import { until } from "../../support/index.ts";
import { mockSkus, Stack, sha256 } from "../e2e/stack.ts";
import { call, envelope, TenantKey } from "./tenant-client.ts";
import { WsClient } from "./ws-client.ts";

/**
 * Durability of an accepted upload, through real processes: providerd is killed (-9)
 * the instant its 202 has been written, before provisioning starts; after a restart the
 * lease still becomes ACTIVE from the payload it fsynced. Then the owner is fenced:
 * every read that needs it answers 503, never a guess from another backend.
 */
const stack = new Stack();
let tenant: TenantKey;
const MANIFEST = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
const hashHex = Buffer.from(sha256(MANIFEST)).toString("hex");

before(async () => {
  await stack.start((s) => {
    const served = mockSkus(s.sku("docker-small"), s.sku("docker-medium"));
    return [{ MOCK_BACKEND_SKUS: served }, { MOCK_BACKEND_SKUS: served }];
  });
  tenant = new TenantKey(stack.account("tenant1").private_key_hex);
});

after(async () => {
  await stack.close();
});

async function payloadLease(): Promise<string> {
  const res = await stack.tenant.send([
    {
      typeUrl: MsgCreateLease.typeUrl,
      value: MsgCreateLease.fromPartial({
        tenant: stack.tenant.address,
        items: [{ skuUuid: stack.sku("docker-medium"), quantity: 1n }],
        metaHash: sha256(MANIFEST),
      }),
    },
  ]);
  return MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
}

describe("tenant upload durability (devnet + providerd + mock backends)", () => {
  let lease = "";

  it("kill -9 right after the 202: the lease still becomes ACTIVE after a restart", async () => {
    await stack.startProviderd({ FRED_FAILPOINTS: "upload.after-accepted" });
    lease = await payloadLease();
    const res = await call(stack.api, `/v1/leases/${lease}/data`, tenant.payload(lease, hashHex), {
      method: "POST",
      body: MANIFEST,
      headers: { "content-type": "application/octet-stream" },
    });
    assert.equal(res.status, 202, res.text);
    const exit = await stack.waitProviderdExit();
    assert.equal(exit.signal, "SIGKILL", "providerd died at the crash point");
    assert.equal(
      await stack.leaseState(lease),
      "LEASE_STATE_PENDING",
      "nothing was provisioned before the kill",
    );

    await stack.startProviderd();
    await stack.waitState([lease], "LEASE_STATE_ACTIVE");
    const status = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
    assert.equal(status.body.payload_received, true);
    await until(async () => {
      const s = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
      return s.body.provision_status === "ready";
    }, "provision ready");
  });

  it("a fenced owner: connection, logs, releases and provision answer 503", async () => {
    const owner = (await stack.workloads([lease]))[0]?.backend;
    assert.ok(owner === "mock-1" || owner === "mock-2");
    await stack.stopProviderd();
    stack.writeConfig(owner === "mock-1" ? [{ fenced: true }, {}] : [{}, { fenced: true }]);
    await stack.launchProviderd();
    await until(async () => (await fetch(`${stack.api}/health`)).status === 200, "providerd answering");
    const token = tenant.access(lease);
    for (const path of ["logs", "releases", "provision"]) {
      const a = await call(stack.api, `/v1/leases/${lease}/${path}`, token);
      assert.equal(a.status, 503, `${path}: ${a.text}`);
      envelope(a);
      assert.equal(a.headers.get("retry-after"), "1");
    }
    const c = await call(stack.api, `/v1/leases/${lease}/connection`, tenant.fresh(lease));
    assert.equal(c.status, 503, c.text);
    const s = await call(stack.api, `/v1/leases/${lease}/status`, token);
    assert.equal(s.status, 200);
    assert.equal(s.body.provision_status, undefined, "no guess from another backend");
  });

  it("SIGTERM closes every event stream with 1001", async () => {
    const url = `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/events`;
    const stream = await new WsClient(url, {
      headers: { authorization: `Bearer ${tenant.access(lease)}` },
    }).open();
    await stream.frame(1);
    assert.equal(await stack.stopProviderd(), 0);
    assert.equal((await stream.closed).code, 1001);
  });
});
