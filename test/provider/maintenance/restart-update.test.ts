import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { addressFromPubkey } from "../../../src/auth/address.ts";
import { compressedPubkey } from "../../../src/auth/keys.ts";
import { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { MaintenanceJournal } from "../../../src/provider/maintenance/journal.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { runFred, until } from "../../support/index.ts";
import { TenantKey } from "../api/tenant-client.ts";
import { WsClient } from "../api/ws-client.ts";
import { mockSkus, SECRETS, SIDS, Stack, sha256 } from "../e2e/stack.ts";
import { backendInventory } from "../reconciler/inventory.ts";

/**
 * Restart and update through the tenant API on real processes: the devnet, one mock
 * backend and providerd, with a replay store and a payload store. The tenant's requests
 * have the shapes the tenant clients send (tenant-clients.md): restart without a body,
 * update with `{"payload": base64}`; tenant1 is also listed in
 * maintenance_legacy_idempotency_tenants, so its requests may omit Idempotency-Key.
 */
const stack = new Stack();
const ACTIVE = "LEASE_STATE_ACTIVE";
const MANIFEST = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
const GOOD = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.28" }));
// The mock fails an update to an image tagged "fail" (and keeps the current release).
const BAD = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:fail" }));
let tenant: TenantKey;

before(async () => {
  await stack.start(
    (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_DELAY: "0s" }],
    (s) => {
      tenant = new TenantKey(s.account("tenant1").private_key_hex);
      s.extraConfig = {
        token_tracker_db_path: `${s.dir}/tokens.db`,
        maintenance_legacy_idempotency_tenants: [addressFromPubkey(compressedPubkey(tenant.privateKey))],
        tenant_rate_limit_rps: 1000,
        tenant_rate_limit_burst: 1000,
      };
    },
  );
  await stack.startProviderd();
});

after(() => stack.close());

function journal<T>(fn: (j: MaintenanceJournal) => T): T {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return fn(MaintenanceJournal.of(s.placements));
  } finally {
    s.close();
  }
}

function lifecycleOf(lease: string): string | undefined {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return s.placements.placement(lease)?.lifecycleId;
  } finally {
    s.close();
  }
}

function storedPayload(lease: string): { payload: Buffer; origin: string } | undefined {
  const db = new Database(stack.payloadPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT payload, origin FROM payloads WHERE lease_uuid = ?").get(lease) as
      | { payload: Buffer; origin: string }
      | undefined;
  } finally {
    db.close();
  }
}

async function command(
  lease: string,
  op: "restart" | "update",
  o: { key?: string; manifest?: Buffer } = {},
): Promise<{ status: number; body: Record<string, unknown> | undefined }> {
  const headers: Record<string, string> = { authorization: `Bearer ${tenant.fresh(lease)}` };
  if (o.key !== undefined) headers["idempotency-key"] = o.key;
  let body: string | undefined;
  if (op === "update") {
    headers["content-type"] = "application/json";
    body = JSON.stringify({ payload: (o.manifest ?? GOOD).toString("base64") });
  }
  const res = await fetch(`${stack.api}/v1/leases/${lease}/${op}`, { method: "POST", headers, body });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

async function statusBody(lease: string): Promise<{ provision_status?: string; reason?: string }> {
  const res = await fetch(`${stack.api}/v1/leases/${lease}/status`, {
    headers: { authorization: `Bearer ${tenant.access(lease)}` },
  });
  return (await res.json()) as { provision_status?: string; reason?: string };
}

async function provisionStatus(lease: string): Promise<string | undefined> {
  return (await statusBody(lease)).provision_status;
}

const settled = (lease: string, key: string) =>
  until(
    () => journal((j) => j.byKey(lease, key)?.phase === "settled"),
    `command ${key} of ${lease} settled`,
    { timeoutMs: 60_000, intervalMs: 100, context: () => stack.providerd?.logTail() ?? "" },
  );

/** The mock's release history of the lease, read through providerd's own client. */
async function releases(lease: string): Promise<{ status: string; manifest?: string }[]> {
  const config = parseProviderConfig(readFileSync(stack.configPath, "utf8"));
  const client = await BackendClient.create({
    backend: config.backends[0]!,
    secret: SECRETS[0]!,
    storageId: SIDS[0],
  });
  try {
    return ((await client.releases(lease)) ?? []) as { status: string; manifest?: string }[];
  } finally {
    await client.close();
  }
}

async function activeLease(payload?: Buffer): Promise<string> {
  const [lease] = await stack.createLeases(
    1,
    "docker-small",
    payload === undefined ? undefined : sha256(payload),
  );
  if (payload !== undefined) {
    const hash = Buffer.from(sha256(payload)).toString("hex");
    const res = await fetch(`${stack.api}/v1/leases/${lease}/data`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${tenant.payload(lease!, hash)}`,
        "content-type": "application/octet-stream",
      },
      body: payload,
    });
    assert.equal(res.status, 202);
  }
  await stack.waitState([lease!], ACTIVE);
  // providerd reuses a chain read for up to a second: wait until it reads ACTIVE too.
  await until(async () => {
    const res = await fetch(`${stack.api}/v1/leases/${lease}/status`, {
      // GET status is not replay-protected: one token serves every poll.
      headers: { authorization: `Bearer ${tenant.access(lease!)}` },
    });
    return ((await res.json()) as { state?: string }).state === ACTIVE;
  }, "providerd reads the lease ACTIVE");
  return lease!;
}

describe("restart and update on real processes", () => {
  it("concurrent identical restarts with one key: one backend command, all 202; frames restarting then ready", async () => {
    const lease = await activeLease();
    const token = tenant.fresh(lease);
    const ws = await new WsClient(
      `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/events?token=${token}`,
    ).open();
    try {
      const key = crypto.randomUUID();
      const answers = await Promise.all(Array.from({ length: 5 }, () => command(lease, "restart", { key })));
      for (const a of answers) assert.deepEqual(a, { status: 202, body: { status: "restarting" } });
      await settled(lease, key);
      // The snapshot first (ready), then restarting, then ready again once the completion lands.
      const statuses: string[] = [];
      for (let i = 1; statuses.indexOf("restarting") < 0 || statuses.at(-1) !== "ready"; i++) {
        statuses.push(String((await ws.frame(i)).status));
      }
      assert.ok(statuses.indexOf("restarting") < statuses.lastIndexOf("ready"), JSON.stringify(statuses));
      // Replay after settlement: the stored 202, nothing sent again.
      assert.deepEqual(await command(lease, "restart", { key }), {
        status: 202,
        body: { status: "restarting" },
      });
      assert.equal(
        journal((j) => j.byKey(lease, key)?.outcome),
        "succeeded",
      );
      assert.equal((await releases(lease)).length, 1, "a restart keeps the release");
      await until(async () => (await provisionStatus(lease)) === "ready", "ready after the restart");
      // A key reused for another command is refused.
      assert.equal((await command(lease, "update", { key })).status, 409);
    } finally {
      ws.ws.close();
      await ws.closed;
    }
  });

  it("a legacy tenant's request without Idempotency-Key (the existing clients' shape) is keyed by its token", async () => {
    const lease = await activeLease();
    const r = await command(lease, "restart");
    assert.deepEqual(r, { status: 202, body: { status: "restarting" } });
    const metrics = await (await fetch(`${stack.api}/metrics`)).text();
    assert.match(metrics, /fred_api_maintenance_legacy_key_total [1-9]/);
  });

  it("update, good manifest: promoted to the lease's payload (its own hash), a new active release", async () => {
    const lease = await activeLease(MANIFEST);
    const key = crypto.randomUUID();
    assert.deepEqual(await command(lease, "update", { key, manifest: GOOD }), {
      status: 202,
      body: { status: "updating" },
    });
    await settled(lease, key);
    const stored = storedPayload(lease);
    assert.deepEqual(stored?.payload, GOOD);
    assert.equal(stored?.origin, "update");
    const history = await releases(lease);
    assert.deepEqual(
      history.map((r) => r.status),
      ["superseded", "active"],
    );
  });

  it("a re-provision after the workload is lost uses the promoted manifest, not the original", async () => {
    const lease = await activeLease(MANIFEST);
    const key = crypto.randomUUID();
    assert.equal((await command(lease, "update", { key, manifest: GOOD })).status, 202);
    await settled(lease, key);
    assert.deepEqual(storedPayload(lease)?.payload, GOOD, "promoted");
    const first = lifecycleOf(lease);

    // The workload vanishes behind the kit's back; an on-demand sweep provisions it again.
    const lost = await signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!).post(
      `/_mock/lose/${lease}`,
      undefined,
    );
    assert.equal(lost.status, 200, lost.text);
    const sweep = await runFred(["providerd", "reconcile", "-c", stack.configPath]);
    assert.equal(sweep.code, 0, sweep.stderr);
    await until(() => lifecycleOf(lease) !== first, "the lease provisioned again under a new operation", {
      timeoutMs: 60_000,
      intervalMs: 200,
      context: () => stack.providerd?.logTail() ?? "",
    });
    await until(
      async () => (await backendInventory(stack)).find((p) => p.leaseUuid === lease)?.status === "ready",
      "the re-provisioned workload ready",
    );
    // What the backend was given is the promoted manifest: its active release is nginx:1.28.
    const active = (await releases(lease)).filter((r) => r.status === "active");
    assert.equal(active.length, 1, JSON.stringify(active));
    assert.equal(active[0]!.manifest, GOOD.toString("base64"));
    assert.equal((active[0] as { image?: string }).image, "docker.io/library/nginx:1.28");
    assert.deepEqual(storedPayload(lease)?.payload, GOOD, "the payload stays the promoted one");
    // The tenant sees it: ready, connectable, and the release history names the new image.
    await until(async () => (await provisionStatus(lease)) === "ready", "ready after the re-provision");
    const connection = await fetch(`${stack.api}/v1/leases/${lease}/connection`, {
      headers: { authorization: `Bearer ${tenant.access(lease)}` },
    });
    assert.equal(connection.status, 200);
    const history = await fetch(`${stack.api}/v1/leases/${lease}/releases`, {
      headers: { authorization: `Bearer ${tenant.access(lease)}` },
    });
    assert.equal(history.status, 200);
    const listed = (await history.json()) as { releases: { status: string; image: string }[] };
    assert.deepEqual(
      listed.releases.filter((r) => r.status === "active").map((r) => r.image),
      ["docker.io/library/nginx:1.28"],
    );
  });

  it("update, bad manifest: failed, the previous payload kept, the exact retry is 409", async () => {
    const lease = await activeLease(MANIFEST);
    const key = crypto.randomUUID();
    // A status read just before the update must not answer for the lease after it: the
    // mock fails the update within milliseconds, well inside the reuse of a backend read.
    assert.deepEqual(await statusBody(lease).then((b) => [b.provision_status, b.reason]), [
      "ready",
      undefined,
    ]);
    assert.equal((await command(lease, "update", { key, manifest: BAD })).status, 202);
    await settled(lease, key);
    assert.equal(
      journal((j) => j.byKey(lease, key)?.outcome),
      "failed",
    );
    assert.deepEqual(
      await statusBody(lease).then((b) => [b.provision_status, b.reason]),
      ["ready", "UpdateFailed"],
      "the first read after the failed update is the rolled-back lease",
    );
    const stored = storedPayload(lease);
    assert.deepEqual(stored?.payload, MANIFEST);
    assert.equal(stored?.origin, "upload");
    assert.deepEqual(
      (await releases(lease)).map((r) => r.status),
      ["active", "failed"],
    );
    assert.equal((await command(lease, "update", { key, manifest: BAD })).status, 409);
    await until(async () => (await provisionStatus(lease)) === "ready", "ready on the old release");
    // The failed attempt's output is still readable, beside the restored release's live logs.
    const res = await fetch(`${stack.api}/v1/leases/${lease}/logs`, {
      headers: { authorization: `Bearer ${tenant.access(lease)}` },
    });
    assert.equal(res.status, 200);
    const { logs } = (await res.json()) as { logs: Record<string, string> };
    const failed = Object.entries(logs).filter(([k]) => k.startsWith("failed/"));
    assert.equal(failed.length, 1, JSON.stringify(logs));
    assert.match(failed[0]![1], /release 2 failed to start/);
    assert.equal(Object.keys(logs).length, 2, "one live key and its failed/ twin");
  });

  it("update whose rollback fails too: the lease reports failed with UpdateFailed, never ready", async () => {
    const lease = await activeLease(MANIFEST);
    const key = crypto.randomUUID();
    const doomed = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:fail-rollback" }));
    assert.equal((await command(lease, "update", { key, manifest: doomed })).status, 202);
    await settled(lease, key);
    assert.equal(
      journal((j) => j.byKey(lease, key)?.outcome),
      "failed",
    );
    assert.deepEqual(storedPayload(lease)?.payload, MANIFEST, "the payload is not promoted");
    const body = await statusBody(lease);
    assert.deepEqual([body.provision_status, body.reason], ["failed", "UpdateFailed"]);
  });

  it("a command pending while the backend is down: another key is 409; it completes after the backend returns", async () => {
    const lease = await activeLease();
    await stack.stopMock(0);
    const key = crypto.randomUUID();
    assert.equal((await command(lease, "restart", { key })).status, 503);
    assert.equal((await command(lease, "restart", { key: crypto.randomUUID() })).status, 409);
    // While pending: "restarting" (or nothing when the backend cannot be read), never the old ready.
    assert.notEqual(await provisionStatus(lease), "ready");
    await stack.restartMock(0);
    assert.equal((await command(lease, "restart", { key })).status, 202, "the exact retry joins recovery");
    await settled(lease, key);
  });

  it("kill -9 providerd after admission: the command is resent at startup and completes", async () => {
    const lease = await activeLease();
    await stack.stopProviderd();
    await stack.launchProviderd({ FRED_FAILPOINTS: "maintenance.after-admit" });
    await until(async () => (await fetch(`${stack.api}/readyz`)).status === 200, "providerd ready");
    const key = crypto.randomUUID();
    await command(lease, "restart", { key }).catch(() => undefined);
    const exit = await stack.waitProviderdExit();
    assert.equal(exit.signal, "SIGKILL");
    assert.equal(
      journal((j) => j.byKey(lease, key)?.phase),
      "admitted",
      "journaled before the crash",
    );
    await stack.startProviderd();
    await settled(lease, key);
    assert.equal(
      journal((j) => j.byKey(lease, key)?.outcome),
      "succeeded",
    );
    assert.deepEqual(await command(lease, "restart", { key }), {
      status: 202,
      body: { status: "restarting" },
    });
  });
});
