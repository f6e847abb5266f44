import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { inventories } from "../../faults/fleet.ts";
import { portOf, until } from "../../support/index.ts";
import { skipWithoutPostgres } from "../../support/postgres.ts";
import { call, TenantKey } from "../api/tenant-client.ts";
import { sha256 } from "../e2e/stack.ts";
import { HaCluster } from "./cluster.ts";

/**
 * providerd on PostgreSQL with a hot standby (issue #36), as processes: two instances over
 * one database behind a TCP front (cluster.ts), the devnet and two mock backends.
 */
const ha = new HaCluster();
const { stack } = ha;
const instances = ha.instances;
let tenant: TenantKey;

/** Every lease in exactly one backend's inventory (no duplicate provision anywhere). */
async function assertPlacedOnce(leases: readonly string[]): Promise<void> {
  const held = new Map<string, string[]>();
  for (const [backend, provisions] of await inventories(stack)) {
    for (const p of provisions) held.set(p.leaseUuid, [...(held.get(p.leaseUuid) ?? []), backend]);
  }
  for (const lease of leases) assert.equal(held.get(lease)?.length, 1, `${lease} on ${held.get(lease)}`);
}

describe("providerd on PostgreSQL: a leader and a hot standby", { skip: skipWithoutPostgres }, () => {
  before(() =>
    ha.start((s) => {
      tenant = new TenantKey(s.account("tenant1").private_key_hex);
    }),
  );
  after(async () => {
    await pool?.end();
    await ha.close();
  });

  it("one leads and the other forwards to it; after a SIGKILL of the leader the standby takes over and every lease is ACTIVE once", async () => {
    await ha.launch(0);
    const leader = await ha.waitReady(0, "leader");
    await ha.launch(1);
    const standby = await ha.waitReady(1, "standby");
    assert.equal(standby.leader, leader.instance, "the standby names the leader");

    // A tenant read sent to the standby is answered by the leader.
    const viaStandby = await fetch(`${instances[1]!.ready.url}/v1/provider`);
    const direct = await fetch(`${instances[0]!.ready.url}/v1/provider`);
    assert.equal(viaStandby.status, 200);
    assert.deepEqual(await viaStandby.json(), await direct.json());
    const metrics = await (await fetch(`${instances[1]!.ready.url}/metrics`)).text();
    assert.match(metrics, /^fred_leader 0$/m);

    const first = await stack.createLeases(10, "docker-small");
    await stack.waitState(first, "LEASE_STATE_ACTIVE", 60_000);

    // The leader dies mid-stream: more leases arrive while nobody leads.
    const killedAt = Date.now();
    await instances[0]!.kill();
    ha.front.targets[0] = 0; // nothing listens on port 0: the front goes to the standby
    const second = await stack.createLeases(10, "docker-small");
    const took = await ha.waitRole(1, "leader", 60_000);
    const takeoverMs = Date.now() - killedAt;
    console.log(`# takeover: the standby led ${takeoverMs} ms after the leader's SIGKILL (TTL 15 s)`);
    await ha.waitReady(1, "leader");
    assert.notEqual(took.instance, leader.instance);
    await stack.waitState(second, "LEASE_STATE_ACTIVE", 90_000);
    await assertPlacedOnce([...first, ...second]);

    // The old instance comes back as a standby of the new leader.
    await ha.launch(0);
    const back = await ha.waitReady(0, "standby");
    assert.equal(back.leader, took.instance);
    for (const p of instances)
      assert.doesNotMatch(p!.stderr(), /changing role failed|could not start as leader/);
  });

  it("a restart and an upload sent to the standby, and callbacks that reach only the standby, are carried out once by the leader", async () => {
    const leaderAt = await ha.leaderIndex();
    const standbyAt = 1 - leaderAt;
    // The front now prefers the standby: every backend callback reaches the standby first.
    ha.front.targets = [portOf(ha.url(standbyAt)), portOf(ha.url(leaderAt))];
    const via = instances[standbyAt]!.ready.url;

    const manifest = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
    const [payloadLease] = (await stack.createLeases(1, "docker-small", sha256(manifest))) as [string];
    const upload = await call(
      via,
      `/v1/leases/${payloadLease}/data`,
      tenant.payload(payloadLease, hexOf(manifest)),
      {
        method: "POST",
        body: manifest,
        headers: { "content-type": "application/octet-stream" },
      },
    );
    assert.equal(upload.status, 202, upload.text);
    await stack.waitState([payloadLease], "LEASE_STATE_ACTIVE", 60_000);
    await assertPlacedOnce([payloadLease]);

    const key = randomUUID();
    const restart = () =>
      call(via, `/v1/leases/${payloadLease}/restart`, tenant.fresh(payloadLease), {
        method: "POST",
        headers: { "idempotency-key": key },
      });
    const first = await restart();
    assert.equal(first.status, 202, first.text);
    const again = await restart();
    assert.equal(again.status, 202, again.text);
    assert.equal(again.body.maintenance_id, first.body.maintenance_id, "the same command, not a second one");
    const pool = await dbPool();
    await until(async () => {
      const { rows } = await pool.query<{ phase: string; outcome: string | null }>(
        "SELECT phase, outcome FROM maintenance_commands WHERE lease_uuid = $1",
        [payloadLease],
      );
      return rows.length === 1 && rows[0]!.outcome === "succeeded";
    }, "one restart journaled and settled (succeeded) by the leader");
  });

  it("PostgreSQL restarted under load: the leader waits for it, nothing is lost, and it still leads", async () => {
    const leaderAt = await ha.leaderIndex();
    const before = await ha.health(leaderAt);
    ha.server.halt();
    let leases: string[];
    try {
      leases = await stack.createLeases(5, "docker-small");
      await new Promise((resolve) => setTimeout(resolve, 3_000));
    } finally {
      ha.server.start();
    }
    await stack.waitState(leases, "LEASE_STATE_ACTIVE", 90_000);
    await assertPlacedOnce(leases);
    const after = await ha.waitReady(leaderAt, "leader");
    assert.equal(after.instance, before?.instance, "a database back within the TTL keeps its leader");
  });

  it("a leader frozen (SIGSTOP) for twice the TTL during a burst is replaced, commits nothing once resumed, and stands by", async () => {
    const frozenAt = await ha.leaderIndex();
    const otherAt = 1 - frozenAt;
    // A frozen process still accepts connections (the kernel's backlog): the front must try the other first.
    ha.front.targets = [portOf(ha.url(otherAt)), portOf(ha.url(frozenAt))];
    const frozen = (await ha.health(frozenAt))!;
    const burst = await stack.createLeases(10, "docker-small");
    instances[frozenAt]!.signal("SIGSTOP");
    const stoppedAt = Date.now();
    try {
      // Up to the TTL, or the server's end of the frozen leader's open transaction (15 s).
      const took = await ha.waitRole(otherAt, "leader", 90_000);
      assert.notEqual(took.instance, frozen.instance);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 30_000 - (Date.now() - stoppedAt))));
    } finally {
      instances[frozenAt]!.signal("SIGCONT");
    }
    const resumed = await ha.waitReady(frozenAt, "standby");
    await ha.waitReady(otherAt, "leader");
    assert.notEqual(resumed.leader, frozen.instance, "it names the new leader");
    await stack.waitState(burst, "LEASE_STATE_ACTIVE", 90_000);
    await assertPlacedOnce(burst);
    // What PostgreSQL holds for the burst: one confirmed placement each, no attempt left over.
    const pool = await dbPool();
    const attempts = await pool.query("SELECT 1 FROM placement_attempts");
    assert.equal(attempts.rowCount, 0, "no attempt is left unresolved");
    const { rows } = await pool.query<{ owner: string; state: string }>(
      "SELECT owner, state FROM placements WHERE lease_uuid = ANY($1::bytea[])",
      [burst.map((u) => Buffer.from(u.replaceAll("-", ""), "hex"))],
    );
    assert.equal(rows.length, burst.length);
    assert.ok(rows.every((r) => r.state === "confirmed"));
    assert.match(instances[frozenAt]!.stderr(), /standing down|no longer leading/);
  });
});

let pool: pg.Pool | undefined;
async function dbPool(): Promise<pg.Pool> {
  if (pool === undefined) {
    pool = new pg.Pool({ connectionString: ha.databaseUrl, max: 2 });
    pool.on("error", () => {}); // an idle connection cut by the PostgreSQL restart: the next query reconnects
  }
  return pool;
}

function hexOf(bytes: Uint8Array): string {
  return Buffer.from(sha256(bytes)).toString("hex");
}
