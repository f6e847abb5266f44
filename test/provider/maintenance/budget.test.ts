import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { openCosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../../../src/chain/cosmos/signer.ts";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../../src/chain/proto/index.ts";
import {
  DEFAULT_LIMITS,
  MaintenanceJournal,
  PHASE_ALLOWANCE,
} from "../../../src/provider/maintenance/journal.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { until } from "../../support/index.ts";
import { TenantKey } from "../api/tenant-client.ts";
import { Stack } from "../e2e/stack.ts";

/**
 * The shared maintenance budget on real processes (devnet with four tenants, one mock
 * backend, providerd): 64 MiB of journal content, of which a tenant with pending work
 * must leave 2 MiB for tenants without. The commands stay pending because every lease is
 * in MOCK_BACKEND_HANG_LEASES: the backend accepts them (202) and never finishes. The
 * budget is filled with ~1 MiB updates, 1,024 leases being far more than a test can run.
 */
const stack = new Stack();
const MAX_BODY = 2 * 1024 * 1024;
const PAYLOAD_BYTES = 1_048_000;
/** What one update takes of the budget: its key (a UUID), its payload and the phase allowance. */
const PER_COMMAND = 36 + PAYLOAD_BYTES + PHASE_ALLOWANCE;
const RESERVED_AT = DEFAULT_LIMITS.bytes - DEFAULT_LIMITS.reserveBytes;
/** How many updates tenant1 (with pending work) gets before the reserve. */
const FILL = Math.floor(RESERVED_AT / PER_COMMAND);

interface Tenant {
  key: TenantKey;
  leases: string[];
}
const tenants: Tenant[] = [];

/** A manifest of exactly `bytes` bytes (padded with an environment variable). */
function manifest(bytes: number, tag: number): Buffer {
  const base = { image: "docker.io/library/nginx:1.28", env: { TAG: String(tag), PAD: "" } };
  const pad = bytes - Buffer.byteLength(JSON.stringify(base));
  return Buffer.from(JSON.stringify({ ...base, env: { ...base.env, PAD: "x".repeat(pad) } }));
}

before(async () => {
  await stack.start(
    () => [{}],
    (s) => {
      s.extraConfig = { token_tracker_db_path: `${s.dir}/tokens.db`, max_request_body_size: MAX_BODY };
    },
    ["--tenants", "4"],
  );
  await stack.startProviderd();
  // tenant1: FILL leases to fill the pool, one more that meets the reserve; tenants 2-4: one each.
  for (const [i, count] of [FILL + 1, 1, 1, 1].entries()) {
    const account = stack.account(`tenant${i + 1}`);
    const chain = await openCosmosChain({
      rpcUrl: stack.devnet.rpc,
      signer: signerFromKey(Buffer.from(account.private_key_hex, "hex")),
      txPollIntervalMs: 50,
      txTimeoutMs: 20_000,
    });
    try {
      const msg = {
        typeUrl: MsgCreateLease.typeUrl,
        value: MsgCreateLease.fromPartial({
          tenant: chain.address,
          items: [{ skuUuid: stack.sku("docker-small"), quantity: 1n }],
        }),
      };
      // The chain allows a tenant 10 PENDING leases: batches of 10, each acknowledged first.
      const leases: string[] = [];
      for (let left = count; left > 0; left -= 10) {
        const res = await chain.send(Array.from({ length: Math.min(10, left) }, () => msg));
        const batch = res.msgResponses.map((a) => MsgCreateLeaseResponse.decode(a.value).leaseUuid);
        await stack.waitState(batch, "LEASE_STATE_ACTIVE");
        leases.push(...batch);
      }
      tenants.push({ key: new TenantKey(account.private_key_hex), leases });
    } finally {
      chain.disconnect();
    }
  }
  const all = tenants.flatMap((t) => t.leases);
  stack.mockEnvs[0] = { ...stack.mockEnvs[0]!, MOCK_BACKEND_HANG_LEASES: all.join(",") };
  await stack.stopMock(0);
  await stack.restartMock(0);
  const last = tenants[3]!;
  await until(async () => {
    const res = await fetch(`${stack.api}/v1/leases/${last.leases[0]}/status`, {
      headers: { authorization: `Bearer ${last.key.access(last.leases[0]!)}` },
    });
    return ((await res.json()) as { provision_status?: string }).provision_status === "ready";
  }, "providerd reads the mock again");
});

after(() => stack.close());

/**
 * One update; `again` for a second request to the same lease. A first request per lease
 * signs with the current second (tokens of different leases never collide: the replay key
 * is the signature), so the fill does not run through TenantKey's per-key fresh timestamps.
 */
async function update(
  who: Tenant,
  lease: string,
  key: string,
  payload: Buffer,
  again = false,
): Promise<{ status: number; body: Record<string, unknown>; retryAfter: string | null }> {
  // A second request stamps a few seconds ahead (the window allows +10 s): never the first's second.
  const token = who.key.access(lease, Math.floor(Date.now() / 1000) + (again ? 5 : 0));
  const res = await fetch(`${stack.api}/v1/leases/${lease}/update`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "idempotency-key": key,
      "content-type": "application/json",
    },
    body: JSON.stringify({ payload: payload.toString("base64") }),
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    retryAfter: res.headers.get("retry-after"),
  };
}

function totals(): { commands: number; bytes: number } {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return MaintenanceJournal.of(s.placements).totals();
  } finally {
    s.close();
  }
}

describe("the shared maintenance budget on real processes", () => {
  it("429 maintenance_capacity_reserved (Retry-After: 1) at the reserve; 503 once the pool is exhausted", async () => {
    const [t1, t2, t3, t4] = tenants as [Tenant, Tenant, Tenant, Tenant];
    const payload = manifest(PAYLOAD_BYTES, 0);
    const keys = Array.from({ length: FILL }, () => crypto.randomUUID());
    // Four at a time: every one of them fits below the reserve, in whatever order.
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < FILL; i = next++) {
        const r = await update(t1, t1.leases[i]!, keys[i]!, payload);
        assert.equal(r.status, 202, `update ${i}: ${JSON.stringify(r.body)}`);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    assert.deepEqual(totals(), { commands: FILL, bytes: FILL * PER_COMMAND });

    // tenant1 has pending work: the reserve is not for it. Nothing is recorded.
    const reserved = await update(t1, t1.leases[FILL]!, crypto.randomUUID(), payload);
    assert.equal(reserved.status, 429);
    assert.equal(reserved.body.reason, "maintenance_capacity_reserved");
    assert.equal(reserved.retryAfter, "1");
    assert.equal(totals().commands, FILL);

    // Tenants without pending work take the reserve, until the pool itself is exhausted.
    for (const t of [t2, t3])
      assert.equal((await update(t, t.leases[0]!, crypto.randomUUID(), payload)).status, 202);
    const full = await update(t4, t4.leases[0]!, crypto.randomUUID(), payload);
    assert.equal(full.status, 503);
    assert.equal(full.body.error, "maintenance capacity is exhausted; retry later");
    assert.equal(full.retryAfter, "1");
    assert.equal(totals().commands, FILL + 2);

    // An exact replay of admitted work is still answered.
    assert.equal((await update(t1, t1.leases[0]!, keys[0]!, payload, true)).status, 202);
  });
});
