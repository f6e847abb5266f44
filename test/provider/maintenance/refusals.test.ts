import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { MaintenanceJournal } from "../../../src/provider/maintenance/journal.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { type Launched, runFred, until } from "../../support/index.ts";
import { TenantKey } from "../api/tenant-client.ts";
import { type MockReady, SIDS, Stack } from "../e2e/stack.ts";

/**
 * The 409 and 410 answers of restart and update on real processes: the devnet, two mock
 * backends and providerd. mock-1 (docker-small) keeps only 2 maintenance receipts per
 * lease (MOCK_BACKEND_MAINTENANCE_RECEIPTS), so a command can be pushed out of its window
 * with a few restarts; mock-2 (docker-medium) is the backend whose storage is lost.
 */
const stack = new Stack();
const SMALL_GOOD = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.28" }));
const SMALL_OTHER = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.29" }));
let tenant: TenantKey;
/** The lease whose commands never finish on mock-1 (MOCK_BACKEND_HANG_LEASES). */
let hanging: string;
let lostMock: Launched<MockReady> | undefined;

before(async () => {
  await stack.start(
    (): Record<string, string>[] => [{ MOCK_BACKEND_MAINTENANCE_RECEIPTS: "2" }, {}],
    (s) => {
      tenant = new TenantKey(s.account("tenant1").private_key_hex);
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-medium")] }];
      s.extraConfig = { token_tracker_db_path: `${s.dir}/tokens.db` };
    },
  );
  await stack.startProviderd();
  hanging = await activeLease();
  // mock-1 again, now with the hanging lease: its workload keeps running, its next
  // restart or update never completes (the command stays pending on both sides).
  stack.mockEnvs[0] = { ...stack.mockEnvs[0]!, MOCK_BACKEND_HANG_LEASES: hanging };
  await stack.stopMock(0);
  await stack.restartMock(0);
  await until(async () => (await provisionStatus(hanging)) === "ready", "providerd reads mock-1 again");
});

after(async () => {
  await lostMock?.stop();
  await stack.close();
});

function journal<T>(fn: (j: MaintenanceJournal) => T): T {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return fn(MaintenanceJournal.of(s.placements));
  } finally {
    s.close();
  }
}

async function command(
  lease: string,
  op: "restart" | "update",
  key: string,
  manifest = SMALL_GOOD,
): Promise<{ status: number; body: Record<string, unknown> | undefined }> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${tenant.fresh(lease)}`,
    "idempotency-key": key,
  };
  let body: string | undefined;
  if (op === "update") {
    headers["content-type"] = "application/json";
    body = JSON.stringify({ payload: manifest.toString("base64") });
  }
  const res = await fetch(`${stack.api}/v1/leases/${lease}/${op}`, { method: "POST", headers, body });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

async function provisionStatus(lease: string): Promise<string | undefined> {
  const res = await fetch(`${stack.api}/v1/leases/${lease}/status`, {
    headers: { authorization: `Bearer ${tenant.access(lease)}` },
  });
  return ((await res.json()) as { provision_status?: string }).provision_status;
}

async function activeLease(sku = "docker-small"): Promise<string> {
  const [lease] = await stack.createLeases(1, sku);
  await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
  await until(async () => (await provisionStatus(lease!)) === "ready", "providerd reads the lease ready");
  return lease!;
}

const settled = (lease: string, key: string) =>
  until(
    () => journal((j) => j.byKey(lease, key)?.phase === "settled"),
    `command ${key} of ${lease} settled`,
    { timeoutMs: 60_000, intervalMs: 100, context: () => stack.providerd?.logTail() ?? "" },
  );

describe("restart/update refusals on real processes", () => {
  it("409: the key reused with another payload or for a restart, and another key while the command runs", async () => {
    const key = crypto.randomUUID();
    assert.deepEqual(await command(hanging, "update", key), { status: 202, body: { status: "updating" } });
    assert.equal(
      journal((j) => j.byKey(hanging, key)?.phase),
      "accepted",
      "running on mock-1",
    );
    const otherPayload = await command(hanging, "update", key, SMALL_OTHER);
    assert.equal(otherPayload.status, 409);
    assert.equal(otherPayload.body?.error, "the Idempotency-Key was used for a different command");
    assert.equal((await command(hanging, "restart", key)).status, 409);
    const otherKey = await command(hanging, "restart", crypto.randomUUID());
    assert.equal(otherKey.status, 409);
    // The reference's text (clients retry a 409 only on "invalid state"), our reason beside it.
    assert.deepEqual(otherKey.body, {
      error: "invalid state for restart",
      code: 409,
      reason: "command_in_progress",
    });
    // The exact retry joins the running command: the same 202, still one command.
    assert.deepEqual(await command(hanging, "update", key), { status: 202, body: { status: "updating" } });
    assert.equal(
      journal((j) => j.totals().commands),
      1,
    );
    assert.equal(await provisionStatus(hanging), "updating");
  });

  it("410 maintenance_expired: a late command the backend's receipt window no longer holds never runs", async () => {
    // providerd journals command A and dies before sending it; its store is backed up
    // there (an operator's backup of a provider with a command pending).
    const lease = await activeLease();
    await stack.stopProviderd();
    await stack.launchProviderd({ FRED_FAILPOINTS: "maintenance.after-admit" });
    await until(async () => (await fetch(`${stack.api}/readyz`)).status === 200, "providerd ready");
    const a = crypto.randomUUID();
    await command(lease, "restart", a).catch(() => undefined);
    assert.equal((await stack.waitProviderdExit()).signal, "SIGKILL");
    assert.equal(
      journal((j) => j.byKey(lease, a)?.phase),
      "admitted",
    );
    const backup = join(stack.dir, "placement-backup");
    const files = ["", "-wal", "-shm"].map((suffix) => `${stack.placementPath}${suffix}`);
    mkdirSync(backup);
    for (const f of files) if (existsSync(f)) copyFileSync(f, join(backup, f.slice(stack.dir.length + 1)));

    // A runs at startup, then B and C: mock-1 keeps the two newest receipts (B, C).
    await stack.startProviderd();
    await settled(lease, a);
    for (const key of [crypto.randomUUID(), crypto.randomUUID()]) {
      assert.equal((await command(lease, "restart", key)).status, 202);
      await settled(lease, key);
    }
    const ran = await logLine(lease);
    assert.match(ran, /after 3 restarts\/updates/);

    // The backup comes back: providerd holds A as never sent and sends it at startup. It
    // is older than the newest command mock-1 accepted and has no receipt: refused, settled.
    await stack.stopProviderd();
    for (const f of files) rmSync(f, { force: true });
    for (const f of files) {
      const saved = join(backup, f.slice(stack.dir.length + 1));
      if (existsSync(saved)) copyFileSync(saved, f);
    }
    await stack.startProviderd();
    await settled(lease, a);
    assert.equal(
      journal((j) => j.byKey(lease, a)?.outcome),
      "expired",
    );
    const retry = await command(lease, "restart", a);
    assert.equal(retry.status, 410);
    assert.equal(retry.body?.reason, "maintenance_expired");
    assert.equal(await logLine(lease), ran, "the expired command did not run");
    // A new command with a new key runs.
    const fresh = crypto.randomUUID();
    assert.equal((await command(lease, "restart", fresh)).status, 202);
    await settled(lease, fresh);
    assert.match(await logLine(lease), /after 4 restarts\/updates/);
  });

  it("410 backend_storage_lost: restart and update of a lease whose backend was retired --lost", async () => {
    const doomed = await activeLease("docker-medium");
    await stack.stopProviderd();
    lostMock = stack.mocks[1];
    stack.mocks = [stack.mocks[0]!];
    stack.writeConfig([stack.backendOverrides[0]!]);
    await lostMock!.stop();
    const retire = await runFred([
      "placement",
      "retire-backend",
      "--config",
      stack.configPath,
      "--name",
      "mock-2",
      "--lost",
      "--confirm",
      SIDS[1]!,
    ]);
    assert.equal(retire.code, 0, retire.stderr);
    await stack.startProviderd();
    // Whether or not providerd has ended the lease on chain yet, the answer is the same.
    const lost = {
      error: "the storage that held this lease is permanently lost",
      reason: "backend_storage_lost",
    };
    for (const op of ["restart", "update"] as const) {
      const r = await command(doomed, op, crypto.randomUUID());
      assert.equal(r.status, 410, `${op}: ${JSON.stringify(r.body)}`);
      assert.deepEqual({ error: r.body?.error, reason: r.body?.reason }, lost);
    }
    assert.equal(
      journal((j) => j.pending(doomed)),
      undefined,
      "nothing recorded",
    );
  });
});

/** The last line of the lease's mock logs, which counts the restarts/updates that ran. */
async function logLine(lease: string): Promise<string> {
  const res = await fetch(`${stack.api}/v1/leases/${lease}/logs?tail=1`, {
    headers: { authorization: `Bearer ${tenant.access(lease)}` },
  });
  assert.equal(res.status, 200);
  const { logs } = (await res.json()) as { logs: Record<string, string> };
  return Object.values(logs).join("");
}
