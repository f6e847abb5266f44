import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { get as httpGet } from "node:http";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { inventories } from "../../faults/fleet.ts";
import { portOf, until } from "../../support/index.ts";
import { skipWithoutPostgres } from "../../support/postgres.ts";
import { call, TenantKey } from "../api/tenant-client.ts";
import { acknowledgementsPerLease, latestHeight } from "../e2e/chain-acks.ts";
import { sha256 } from "../e2e/stack.ts";
import { HaCluster } from "./cluster.ts";

/**
 * providerd on PostgreSQL with hot standbys (issue #36), as processes: two or three
 * instances over one database behind a TCP front (cluster.ts), the devnet (bench genesis:
 * a tenant may hold 1,000 PENDING leases) and two mock backends with room for every lease.
 */
const ha = new HaCluster();
const { stack } = ha;
const instances = ha.instances;
let tenant: TenantKey;
const BURST = 1_000;
/** Mock backend capacity with room for every lease the cases create. */
const ROOMY = JSON.stringify({ cpu_cores: 100_000, memory_mb: 1e9, disk_mb: 1e10 });

/** Every lease in exactly one backend's inventory (no duplicate provision anywhere). */
async function assertPlacedOnce(leases: readonly string[]): Promise<void> {
  const held = new Map<string, string[]>();
  for (const [backend, provisions] of await inventories(stack)) {
    for (const p of provisions) held.set(p.leaseUuid, [...(held.get(p.leaseUuid) ?? []), backend]);
  }
  for (const lease of leases) assert.equal(held.get(lease)?.length, 1, `${lease} on ${held.get(lease)}`);
}

/** Until every lease in `leases` is ACTIVE, from the provider's listing (one query per poll, not one per lease). */
async function waitActive(leases: readonly string[], timeoutMs: number): Promise<void> {
  const want = new Set(leases);
  let active = 0;
  await until(
    async () => {
      const listed = await stack.tenant.leasesByProvider(stack.keys.provider_uuid, "LEASE_STATE_ACTIVE");
      active = listed.filter((l) => want.has(l.uuid)).length;
      return active === want.size;
    },
    `${want.size} leases ACTIVE`,
    { timeoutMs, intervalMs: 1_000, context: () => `${active} of ${want.size} ACTIVE` },
  );
}

describe("providerd on PostgreSQL: a leader and hot standbys", { skip: skipWithoutPostgres }, () => {
  before(() =>
    ha.start(
      (s) => {
        tenant = new TenantKey(s.account("tenant1").private_key_hex);
        // The default callback budget (100/s per backend) would stretch the burst.
        s.extraConfig = { callback_rate_limit_rps: 100_000, callback_rate_limit_burst: 100_000 };
      },
      () => [{ MOCK_BACKEND_CAPACITY: ROOMY }, { MOCK_BACKEND_CAPACITY: ROOMY }],
      ["--profile", "bench", "--tenants", "2"],
    ),
  );
  after(async () => {
    await pool?.end();
    await ha.close();
  });

  it("three instances: one leads, the others forward to it; the leader SIGKILLed during a 1,000-lease burst is replaced and every lease is ACTIVE exactly once", async () => {
    await ha.launch(0);
    const leader = await ha.waitReady(0, "leader");
    await Promise.all([ha.launch(1), ha.launch(2)]);
    for (const i of [1, 2]) {
      const standby = await ha.waitReady(i, "standby");
      assert.equal(standby.leader, leader.instance, "each standby names the leader");
    }

    // A tenant read sent to a standby is answered by the leader.
    const viaStandby = await fetch(`${instances[1]!.ready.url}/v1/provider`);
    const direct = await fetch(`${instances[0]!.ready.url}/v1/provider`);
    assert.equal(viaStandby.status, 200);
    assert.deepEqual(await viaStandby.json(), await direct.json());
    const metrics = await (await fetch(`${instances[2]!.ready.url}/metrics`)).text();
    assert.match(metrics, /^fred_leader 0$/m);

    const first = await stack.createLeases(10, "docker-small");
    await stack.waitState(first, "LEASE_STATE_ACTIVE", 60_000);

    // The burst: tenant2 creates 1,000 leases, 100 per block; after the third block the
    // leader is killed, and the other 700 arrive while nobody leads.
    const fromHeight = await latestHeight(stack);
    // Both standbys' own addresses are asked all along the takeover, for their own health
    // and for a tenant read they forward: none may refuse (a read waits for the new leader).
    const probes = [1, 2].flatMap((i) => [probe(ha.url(i), "/health"), probe(ha.url(i), "/v1/provider")]);
    let killedAt = 0;
    const burst = await stack.createLeasesFor("tenant2", BURST, "docker-small", async (created) => {
      if (created !== 300) return;
      killedAt = Date.now();
      await instances[0]!.kill();
      ha.front.targets[0] = 0; // nothing listens on port 0: the front goes to the standbys
    });
    const [newLeader, took] = await ha.waitLeaderAmong([1, 2], 60_000);
    console.log(
      `# takeover: instance ${newLeader} led ${Date.now() - killedAt} ms after the leader's SIGKILL (TTL 15 s)`,
    );
    assert.notEqual(took.instance, leader.instance);
    await ha.waitReady(newLeader, "leader");
    const failures = (await Promise.all(probes.map((p) => p.stop()))).flat();
    assert.deepEqual(failures, [], "the standbys' addresses answered every probe through the takeover");
    await waitActive(burst, 240_000);

    const all = [...first, ...burst];
    await assertPlacedOnce(all);
    // No orphan: the backends hold these leases and nothing else.
    const created = new Set(all);
    for (const [backend, provisions] of await inventories(stack))
      for (const p of provisions)
        assert.ok(created.has(p.leaseUuid), `${p.leaseUuid} on ${backend} is no lease of ours`);
    // No duplicate acknowledgement: the chain's blocks name each lease of the burst in one acknowledgement message.
    const acks = await acknowledgementsPerLease(stack, fromHeight);
    const twice = burst.filter((l) => (acks.get(l) ?? 0) > 1);
    assert.deepEqual(twice, [], "no lease acknowledged twice");
    assert.equal(burst.filter((l) => acks.get(l) === 1).length, BURST, "every lease acknowledged once");

    // The old instance comes back as a standby of the new leader; the third one stops
    // (the later cases need two).
    await ha.launch(0);
    const back = await ha.waitReady(0, "standby");
    assert.equal(back.leader, took.instance);
    const spare = newLeader === 1 ? 2 : 1;
    await instances[spare]!.stop();
    ha.front.targets[spare] = 0;
    for (const p of instances)
      assert.doesNotMatch(p!.stderr(), /changing role failed|could not start as leader/);
  });

  it("a restart and an upload sent to the standby, and callbacks that reach only the standby, are carried out once by the leader", async () => {
    const leaderAt = await ha.leaderIndex();
    const standbyAt = ha.otherThan(leaderAt);
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

  it("a standby cut off from the leader's address (not from PostgreSQL) journals what it receives: a read is answered, a restart is carried out once by the leader", async () => {
    const leaderAt = await ha.leaderIndex();
    const standbyAt = ha.otherThan(leaderAt);
    ha.front.targets = [portOf(ha.url(standbyAt)), portOf(ha.url(leaderAt))];
    const via = instances[standbyAt]!.ready.url;
    const [lease] = (await stack.createLeases(1, "docker-small")) as [string];
    await stack.waitState([lease], "LEASE_STATE_ACTIVE", 60_000);
    const pool = await dbPool();
    // What the standby journals, as a trigger sees it (the rows go once answered).
    await pool.query(`CREATE TABLE inbox_seen (method text, url text);
      CREATE FUNCTION inbox_seen() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN INSERT INTO inbox_seen VALUES (NEW.method, NEW.url); RETURN NEW; END $$;
      CREATE TRIGGER inbox_seen AFTER INSERT ON fred_inbox FOR EACH ROW EXECUTE FUNCTION inbox_seen()`);
    const { rows } = await pool.query<{ address: string }>("SELECT address FROM fred_leader");
    // The partition: the leader's advertised address refuses every connection (nothing
    // listens on port 1 here); both instances still reach the database.
    await pool.query("UPDATE fred_leader SET address = 'http://127.0.0.1:1'");
    try {
      // The standby reads the address again at its next look at the lease (a renewal period).
      await until(
        async () => {
          const read = await fetch(`${via}/v1/provider`);
          assert.equal(read.status, 200);
          return ((await pool.query("SELECT 1 FROM inbox_seen")).rowCount ?? 0) > 0;
        },
        "a read journaled by the standby and answered",
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      const restart = await call(via, `/v1/leases/${lease}/restart`, tenant.fresh(lease), {
        method: "POST",
        headers: { "idempotency-key": randomUUID() },
      });
      assert.equal(restart.status, 202, restart.text);
      await until(async () => {
        const { rows } = await pool.query<{ outcome: string | null }>(
          "SELECT outcome FROM maintenance_commands WHERE lease_uuid = $1",
          [lease],
        );
        return rows.length === 1 && rows[0]!.outcome === "succeeded";
      }, "one restart journaled and settled (succeeded) by the leader");
      const posts = (
        await pool.query<{ url: string }>("SELECT url FROM inbox_seen WHERE method = 'POST'")
      ).rows.map((r) => r.url);
      assert.ok(posts.includes(`/v1/leases/${lease}/restart`), posts.join(", "));
    } finally {
      await pool.query("UPDATE fred_leader SET address = $1", [rows[0]!.address]);
      await pool.query(
        "DROP TABLE inbox_seen; DROP TRIGGER inbox_seen ON fred_inbox; DROP FUNCTION inbox_seen()",
      );
    }
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
    const otherAt = ha.otherThan(frozenAt);
    // A frozen process still accepts connections (the kernel's backlog): the front must try the other first.
    ha.front.targets = [portOf(ha.url(otherAt)), portOf(ha.url(frozenAt))];
    const frozen = (await ha.health(frozenAt))!;
    const burst = await stack.createLeases(10, "docker-small");
    instances[frozenAt]!.signal("SIGSTOP");
    const stoppedAt = Date.now();
    // Tenant reads sent to the standby all along: those stuck on the frozen leader move to the new one.
    const reads = probe(ha.url(otherAt), "/v1/provider");
    try {
      // Up to the TTL, or the server's end of the frozen leader's open transaction (15 s).
      const took = await ha.waitRole(otherAt, "leader", 90_000);
      assert.notEqual(took.instance, frozen.instance);
      await ha.waitReady(otherAt, "leader");
      assert.deepEqual(await reads.stop(), [], "every read sent to the standby was answered");
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 30_000 - (Date.now() - stoppedAt))));
    } finally {
      await reads.stop();
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

/**
 * GET `path` on `url` every 20 ms, each on a new connection, until stopped; what failed (a
 * refused or reset connection, a 5xx). A request may wait: while the new leader's daemon
 * starts, its socket holds the connections it accepts, and a standby holds what it forwards
 * until a leader serves (the slowest answer is printed).
 */
function probe(url: string, path: string): { stop(): Promise<string[]> } {
  const failures: string[] = [];
  let running = true;
  let slowest = 0;
  const once = () =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpGet(`${url}${path}`, { agent: false, timeout: 60_000 }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (d: string) => {
          body += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("timeout", () => req.destroy(new Error("no answer in 60 s")));
      req.on("error", reject);
    });
  const loop = (async () => {
    while (running) {
      const sent = Date.now();
      try {
        const { status, body } = await once();
        slowest = Math.max(slowest, Date.now() - sent);
        if (status >= 500) failures.push(`${url}${path}: ${status} ${body.slice(0, 200)}`);
      } catch (err) {
        failures.push(`${url}${path}: ${String(err)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    stop() {
      if (!running) return loop.then(() => failures);
      running = false;
      return loop.then(() => {
        console.log(`# ${url}: the slowest ${path} answer took ${slowest} ms`);
        return failures;
      });
    },
  };
}

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
