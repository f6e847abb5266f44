import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { parse, stringify } from "yaml";
import { inventories } from "../../faults/fleet.ts";
import { type Launched, launchFred, portOf, runFred, until } from "../../support/index.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../../support/postgres.ts";
import { call, TenantKey } from "../api/tenant-client.ts";
import { Stack, sha256 } from "../e2e/stack.ts";

/**
 * providerd on PostgreSQL with a hot standby (issue #36), as processes: the devnet, two
 * mock backends, a real PostgreSQL cluster, two providerd instances sharing its database,
 * and a TCP front (what a load balancer is) that sends each connection to the first
 * instance that accepts it, so backends call back on one address whichever instance leads.
 */
const stack = new Stack();
let server: TestPostgres;
let databaseUrl: string;
let front: Front;
const instances: (Launched<{ url: string }> | undefined)[] = [undefined, undefined];
let tenant: TenantKey;

interface Health {
  role: "leader" | "standby";
  instance: string;
  leader: string | null;
}

/** A TCP front over the instances' API ports: the first that accepts gets the connection. */
interface Front {
  url: string;
  targets: number[];
  server: Server;
}

async function startFront(): Promise<Front> {
  const front: Front = { url: "", targets: [], server: createServer() };
  front.server.on("connection", (client: Socket) => {
    client.pause();
    const tryTarget = (i: number): void => {
      const port = front.targets[i];
      if (port === undefined) {
        client.destroy();
        return;
      }
      const upstream = connect(port, "127.0.0.1");
      upstream.once("error", () => tryTarget(i + 1));
      upstream.once("connect", () => {
        upstream.removeAllListeners("error");
        client.pipe(upstream).pipe(client);
        client.resume();
        const end = () => {
          client.destroy();
          upstream.destroy();
        };
        client.on("error", end);
        upstream.on("error", end);
      });
    };
    tryTarget(0);
  });
  await new Promise<void>((resolve) => front.server.listen(0, "127.0.0.1", resolve));
  const address = front.server.address() as { port: number };
  front.url = `http://127.0.0.1:${address.port}`;
  return front;
}

/** Instance `i`'s config: the stack's, with the stores in PostgreSQL and callbacks on the front. */
function writeInstanceConfig(i: number): string {
  const base = parse(readFileSync(stack.configPath, "utf8")) as Record<string, unknown>;
  delete base.placement_store_db_path;
  delete base.payload_store_db_path;
  const stateDir = join(stack.dir, `instance-${i}`);
  mkdirSync(stateDir, { recursive: true });
  const path = join(stateDir, "providerd.yaml");
  writeFileSync(
    path,
    stringify({
      ...base,
      database_url: databaseUrl,
      state_dir: stateDir,
      api_listen_addr: "127.0.0.1:0",
      callback_base_url: front.url,
      operator_listen_addr: "",
    }),
  );
  return path;
}

async function launch(i: number): Promise<Launched<{ url: string }>> {
  const launched = await launchFred<{ url: string }>(["providerd", "-c", writeInstanceConfig(i)], {
    label: `providerd-${i}`,
    env: { FRED_LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? "warn" },
    readyTimeoutMs: 120_000,
  });
  instances[i] = launched;
  front.targets[i] = portOf(launched.ready.url);
  return launched;
}

async function health(url: string): Promise<Health | undefined> {
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(3_000) });
    return res.status === 200 ? ((await res.json()) as Health) : undefined;
  } catch {
    return undefined;
  }
}

async function waitRole(i: number, role: Health["role"], timeoutMs = 60_000): Promise<Health> {
  let seen: Health | undefined;
  await until(
    async () => {
      seen = await health(instances[i]!.ready.url);
      return seen?.role === role;
    },
    `instance ${i} ready as ${role}`,
    { timeoutMs, intervalMs: 100, context: () => `${JSON.stringify(seen)}\n${instances[i]!.logTail()}` },
  );
  return seen!;
}

/** Every lease in exactly one backend's inventory (no duplicate provision anywhere). */
async function assertPlacedOnce(leases: readonly string[]): Promise<void> {
  const held = new Map<string, string[]>();
  for (const [backend, provisions] of await inventories(stack)) {
    for (const p of provisions) held.set(p.leaseUuid, [...(held.get(p.leaseUuid) ?? []), backend]);
  }
  for (const lease of leases) assert.equal(held.get(lease)?.length, 1, `${lease} on ${held.get(lease)}`);
}

describe("providerd on PostgreSQL: a leader and a hot standby", { skip: skipWithoutPostgres }, () => {
  before(async () => {
    [server] = await Promise.all([
      startPostgres(),
      stack.start(undefined, (s) => {
        tenant = new TenantKey(s.account("tenant1").private_key_hex);
      }),
    ]);
    databaseUrl = server.createDatabase("providerd_ha");
    // The provider's SQLite stores (placement init) move into PostgreSQL, as an operator would.
    const moved = await runFred(["placement", "migrate", "--config", stack.configPath, "--to", databaseUrl]);
    assert.equal(moved.code, 0, moved.stderr);
    front = await startFront();
  });
  after(async () => {
    await pool?.end();
    await Promise.all(instances.map((p) => p?.stop()));
    front?.server.close();
    await stack.close();
    server?.stop();
  });

  it("one leads and the other forwards to it; after a SIGKILL of the leader the standby takes over and every lease is ACTIVE once", async () => {
    await launch(0);
    const leader = await waitRole(0, "leader");
    await launch(1);
    const standby = await waitRole(1, "standby");
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
    front.targets[0] = 0; // nothing listens on port 0: the front goes to the standby
    const second = await stack.createLeases(10, "docker-small");
    const took = await waitRole(1, "leader", 60_000);
    const takeoverMs = Date.now() - killedAt;
    console.log(`# takeover: the standby led ${takeoverMs} ms after the leader's SIGKILL (TTL 15 s)`);
    assert.notEqual(took.instance, leader.instance);
    await stack.waitState(second, "LEASE_STATE_ACTIVE", 90_000);
    await assertPlacedOnce([...first, ...second]);

    // The old instance comes back as a standby of the new leader.
    await launch(0);
    const back = await waitRole(0, "standby");
    assert.equal(back.leader, took.instance);
    for (const p of instances)
      assert.doesNotMatch(p!.stderr(), /changing role failed|could not start as leader/);
  });

  it("a restart and an upload sent to the standby, and callbacks that reach only the standby, are carried out once by the leader", async () => {
    const leaderAt = await leaderIndex();
    const standbyAt = 1 - leaderAt;
    // The front now prefers the standby: every backend callback reaches the standby first.
    front.targets = [portOf(instances[standbyAt]!.ready.url), portOf(instances[leaderAt]!.ready.url)];
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
    const leaderAt = await leaderIndex();
    const before = await health(instances[leaderAt]!.ready.url);
    server.halt();
    let leases: string[];
    try {
      leases = await stack.createLeases(5, "docker-small");
      await new Promise((resolve) => setTimeout(resolve, 3_000));
    } finally {
      server.start();
    }
    await stack.waitState(leases, "LEASE_STATE_ACTIVE", 90_000);
    await assertPlacedOnce(leases);
    const after = await waitRole(leaderAt, "leader");
    assert.equal(after.instance, before?.instance, "a database back within the TTL keeps its leader");
  });

  it("a leader frozen (SIGSTOP) for twice the TTL during a burst is replaced, commits nothing once resumed, and stands by", async () => {
    const frozenAt = await leaderIndex();
    const otherAt = 1 - frozenAt;
    // A frozen process still accepts connections (the kernel's backlog): the front must try the other first.
    front.targets = [portOf(instances[otherAt]!.ready.url), portOf(instances[frozenAt]!.ready.url)];
    const frozen = (await health(instances[frozenAt]!.ready.url))!;
    const burst = await stack.createLeases(10, "docker-small");
    instances[frozenAt]!.signal("SIGSTOP");
    const stoppedAt = Date.now();
    try {
      const took = await waitRole(otherAt, "leader", 60_000);
      assert.notEqual(took.instance, frozen.instance);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 30_000 - (Date.now() - stoppedAt))));
    } finally {
      instances[frozenAt]!.signal("SIGCONT");
    }
    const resumed = await waitRole(frozenAt, "standby", 60_000);
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

/** Which instance leads now (by its own /readyz). */
async function leaderIndex(): Promise<number> {
  for (let i = 0; i < instances.length; i++) {
    if ((await health(instances[i]!.ready.url))?.role === "leader") return i;
  }
  throw new Error("no instance leads");
}

let pool: pg.Pool | undefined;
async function dbPool(): Promise<pg.Pool> {
  if (pool === undefined) {
    pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    pool.on("error", () => {}); // an idle connection cut by the PostgreSQL restart: the next query reconnects
  }
  return pool;
}

function hexOf(bytes: Uint8Array): string {
  return Buffer.from(sha256(bytes)).toString("hex");
}
