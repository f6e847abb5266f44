import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { withStore } from "../../faults/fleet.ts";
import { until } from "../../support/index.ts";
import { TenantKey } from "../api/tenant-client.ts";
import { Stack, sha256 } from "../e2e/stack.ts";

/**
 * A restore racing the empty provision of a target created without a meta_hash, on a
 * backend that refuses manifest-less provisions (MOCK_BACKEND_REQUIRE_PAYLOAD=1, as the
 * Docker backend does). providerd provisions such a lease at once; the refusal makes it
 * reject the lease on chain, and until that tx lands the lease is still PENDING with no
 * attempt. Whatever the interleaving, the retained data stays findable by its lease UUID
 * (a later restore of it reaches ACTIVE) and the rejected target's placement row is never
 * left confirmed without the retained mark.
 */
const stack = new Stack();
const MANIFEST = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
const HASH = sha256(MANIFEST);
const HASH_HEX = Buffer.from(HASH).toString("hex");
let tenant: TenantKey;
const context = () => stack.providerd?.logTail() ?? "";

before(async () => {
  await stack.start(
    (s): Record<string, string>[] => [
      {
        MOCK_BACKEND_RETAIN_ON_CLOSE: "1",
        MOCK_BACKEND_REQUIRE_PAYLOAD: "1",
        MOCK_BACKEND_SKUS: JSON.stringify({
          [s.sku("docker-medium")]: { cpu_cores: 0.5, memory_mb: 256, disk_mb: 1024 },
        }),
      },
    ],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-medium")] }];
      s.extraConfig = { reconciliation_interval: "1h" };
    },
  );
  tenant = new TenantKey(stack.account("tenant1").private_key_hex);
  await stack.startProviderd({ FRED_LOG_LEVEL: "info" });
});

after(async () => {
  await stack.close();
});

async function status(lease: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${stack.api}/v1/leases/${lease}/status`, {
    headers: { authorization: `Bearer ${tenant.fresh(lease)}` },
  });
  return (await res.json()) as Record<string, unknown>;
}

async function restore(target: string, from: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${stack.api}/v1/leases/${target}/restore`, {
    method: "POST",
    body: JSON.stringify({ from_lease_uuid: from }),
    headers: { authorization: `Bearer ${tenant.fresh(target)}`, "content-type": "application/json" },
  });
  return { status: res.status, body: await res.text() };
}

async function retainedLease(): Promise<string> {
  const [lease] = await stack.createLeases(1, "docker-medium", HASH);
  const up = await fetch(`${stack.api}/v1/leases/${lease}/data`, {
    method: "POST",
    body: MANIFEST,
    headers: { authorization: `Bearer ${tenant.payload(lease!, HASH_HEX)}` },
  });
  assert.equal(up.status, 202, await up.text());
  await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
  await stack.tenant.closeLeases([lease!], "done for now");
  await until(async () => (await status(lease!)).provision_status === "retained", "the data is retained", {
    context,
  });
  return lease!;
}

describe("a restore racing the empty provision of a target without meta_hash", () => {
  it("leaves the data restorable by its lease UUID and no rejected lease confirmed", async () => {
    const source = await retainedLease();
    const [target] = await stack.createLeases(1, "docker-medium");
    // The empty provision has been refused: the reject is decided, not yet on chain.
    await until(
      () =>
        stack
          .providerd!.logTail(200_000)
          .split("\n")
          .some((l) => l.includes("provision refused") && l.includes(target!)),
      "the empty provision refused",
      { context },
    );
    const first = await restore(target!, source);
    assert.ok([202, 409].includes(first.status), JSON.stringify(first));
    await stack.waitState([target!], "LEASE_STATE_REJECTED");
    // Whichever lease holds the data now, it is restorable from there, once.
    const [fresh] = await stack.createLeases(1, "docker-medium", HASH);
    const fromSource = await restore(fresh!, source);

    if (fromSource.status !== 202) {
      assert.equal(fromSource.status, 404, fromSource.body);
      const fromTarget = await until(
        async () => {
          const r = await restore(fresh!, target!);
          return r.status === 202 ? r : undefined;
        },
        "the data restorable from the rejected target",
        { context, intervalMs: 1100, timeoutMs: 10_000 },
      );
      assert.equal(fromTarget.status, 202);
    }
    await stack.waitState([fresh!], "LEASE_STATE_ACTIVE");
    const row = withStore(stack, (s) => ({
      placement: s.placements.placement(target!),
      retained: s.placements.retained.get(target!),
    }));
    assert.ok(
      row.placement === undefined || row.placement.state !== "confirmed" || row.retained !== undefined,
      `the rejected target's row is left confirmed: ${JSON.stringify(row)}`,
    );
  });
});
