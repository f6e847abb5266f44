import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../../src/chain/proto/index.ts";
import { until } from "../../support/index.ts";
import { mockSkus, Stack, sha256 } from "../e2e/stack.ts";
import { call, TenantKey } from "./tenant-client.ts";
import { WsClient } from "./ws-client.ts";

/**
 * A tenant learns why its lease failed, through real processes: the only backend fails
 * every workload at start, providerd rejects the lease, and the tenant — holding only its
 * wallet key — reads the reason from GET provision, GET status, the event stream and the
 * logs the backend kept, although nothing is placed for the lease any more.
 */
const stack = new Stack();
let tenant: TenantKey;
const MANIFEST = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
const hashHex = Buffer.from(sha256(MANIFEST)).toString("hex");

before(async () => {
  await stack.start((s) => [
    { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_FAIL_RATE: "1" },
  ]);
  tenant = new TenantKey(stack.account("tenant1").private_key_hex);
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

describe("why a lease failed (devnet + providerd + a failing mock backend)", () => {
  it("provision, status, events and logs explain a rejected lease", async () => {
    const res = await stack.tenant.send([
      {
        typeUrl: MsgCreateLease.typeUrl,
        value: MsgCreateLease.fromPartial({
          tenant: stack.tenant.address,
          items: [{ skuUuid: stack.sku("docker-small"), quantity: 1n }],
          metaHash: sha256(MANIFEST),
        }),
      },
    ]);
    const lease = MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
    const url = `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/events?token=${encodeURIComponent(tenant.access(lease))}`;
    const stream = await new WsClient(url).open();
    await stream.frame(1);
    const upload = await call(stack.api, `/v1/leases/${lease}/data`, tenant.payload(lease, hashHex), {
      method: "POST",
      body: MANIFEST,
    });
    assert.equal(upload.status, 202, upload.text);
    const failedFrame = await until(
      () => stream.frames.find((f) => f.status === "failed"),
      "a failed frame on the stream",
    );
    assert.equal(typeof failedFrame.error, "string");
    assert.ok((failedFrame.error as string).length > 0);
    stream.close();
    await stack.waitState([lease], "LEASE_STATE_REJECTED");

    const token = tenant.access(lease);
    const p = await call(stack.api, `/v1/leases/${lease}/provision`, token);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.status, "failed");
    assert.equal(p.body.reason, "ContainerExited");
    assert.ok((p.body.fail_count as number) >= 1);
    assert.equal(typeof p.body.message, "string");

    const s = await until(async () => {
      const a = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
      return a.body.state === "LEASE_STATE_REJECTED" ? a.body : undefined;
    }, "status REJECTED");
    assert.equal(s.provision_status, "failed");
    assert.equal(s.reason, "ContainerExited");
    assert.equal(s.provisioning_started, false);

    const logs = await call(stack.api, `/v1/leases/${lease}/logs`, token);
    assert.equal(logs.status, 200, logs.text);
    assert.ok(Object.keys(logs.body.logs as object).length > 0, "the failed workload's logs were kept");
  });
});
