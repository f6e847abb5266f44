import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import { type Clock, ManualClock, systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { openPostgres } from "../../../src/pg/open.ts";
import {
  LEADER_ADDRESS_MIGRATION,
  LEADER_LEASE_MIGRATION,
  LeaderLease,
  type LeaderState,
} from "../../../src/provider/ha/leader-lease.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../../support/postgres.ts";
import { launchScript } from "../../support/process.ts";
import { until } from "../../support/until.ts";
import { WRITES_MIGRATION } from "./writes.ts";

const silent = createLogger("leader-lease-test", "silent");
const TTL = 1_500;
const RENEW = 500;
/** The role changes heard, with the generation while leading (repeats collapsed: a standby also hears who leads). */
const roles = (heard: LeaderState[]) =>
  heard
    .map((s) => (s.role === "leader" ? `leader@${s.generation}` : "standby"))
    .filter((r, i, all) => i === 0 || all[i - 1] !== r);

describe("the leader lease on PostgreSQL", { skip: skipWithoutPostgres }, () => {
  let server: TestPostgres;
  const pools: pg.Pool[] = [];
  let n = 0;

  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const p of pools) await p.end().catch(() => {});
    server?.stop();
  });

  /** A fresh database with the lease table, and a pool on it for each instance. */
  async function database(instances: number) {
    const url = server.createDatabase(`lease_${++n}`);
    const open = () =>
      openPostgres({
        url,
        label: "test store",
        migrations: [LEADER_LEASE_MIGRATION, LEADER_ADDRESS_MIGRATION, WRITES_MIGRATION],
        logger: silent,
      });
    const list: pg.Pool[] = [];
    for (let i = 0; i < instances; i++) list.push(await open());
    pools.push(...list);
    return Object.assign(list, { url });
  }

  function lease(pool: pg.Pool, provider: string, opts: { clock?: Clock; heard?: LeaderState[] } = {}) {
    const instance = randomUUID();
    return new LeaderLease({
      pool,
      providerUuid: provider,
      instance,
      clock: opts.clock ?? systemClock,
      logger: silent,
      ttlMs: TTL,
      renewMs: RENEW,
      onChange: (s) => opts.heard?.push(s),
    });
  }

  const write = (l: LeaderLease, who: string) =>
    l.fenced(async (c) => {
      await c.query("INSERT INTO writes (instance, generation) VALUES ($1, $2)", [who, l.state.generation]);
    });
  const writes = async (pool: pg.Pool) =>
    (
      await pool.query<{ instance: string; generation: string }>(
        "SELECT instance, generation FROM writes ORDER BY at",
      )
    ).rows.map((r) => `${r.instance}@${r.generation}`);

  it("one instance leads at generation 1, another waits as a standby naming it", async () => {
    const [p1, p2] = await database(2);
    const provider = randomUUID();
    const a = lease(p1!, provider);
    const b = lease(p2!, provider);
    assert.equal((await a.tryNow()).role, "leader");
    assert.equal(a.state.generation, 1);
    assert.equal(b.read, false, "before its first campaign a standby does not know who leads");
    const standby = await b.tryNow();
    assert.equal(b.read, true);
    assert.equal(standby.role, "standby");
    assert.equal(standby.generation, undefined);
    assert.equal(standby.leader, a.state.leader, "the standby says who leads");
    // What /health reports (Leadership): each its own id, both naming the leader.
    assert.equal(a.current().leader, a.instance);
    assert.deepEqual(b.current(), { role: "standby", generation: undefined, leader: a.instance });
    assert.notEqual(a.instance, b.instance);
    // Extending keeps the generation; a standby cannot write.
    assert.equal((await a.tryNow()).generation, 1);
    await write(a, "a");
    await assert.rejects(write(b, "b"), { code: "ERR_NOT_LEADER" });
    assert.deepEqual(await writes(p1!), ["a@1"]);
    await a.stop();
    await b.stop();
  });

  it("a leader that stops releases the lease: the standby leads at its next try, one generation up", async () => {
    const [p1, p2] = await database(2);
    const provider = randomUUID();
    const a = lease(p1!, provider);
    const heard: LeaderState[] = [];
    const b = lease(p2!, provider, { heard });
    await a.tryNow();
    await b.tryNow();
    await a.stop();
    assert.equal(a.state.role, "standby");
    const next = await b.tryNow();
    assert.equal(next.role, "leader");
    assert.equal(next.generation, 2);
    assert.equal(heard.at(-1)?.role, "leader");
    await assert.rejects(write(a, "a"), { code: "ERR_NOT_LEADER" });
    await write(b, "b");
    assert.deepEqual(await writes(p1!), ["b@2"]);
    await b.stop();
  });

  it("a leader that stops extending loses the lease after the TTL, and learns it at its next try", async () => {
    const [p1, p2] = await database(2);
    const provider = randomUUID();
    const heard: LeaderState[] = [];
    const a = lease(p1!, provider, { heard });
    const b = lease(p2!, provider);
    await a.tryNow();
    assert.equal((await b.tryNow()).role, "standby", "not before the lease expires");
    await until(() => !a.isLeader(), "a's local deadline", { timeoutMs: 10_000, intervalMs: 100 });
    await assert.rejects(write(a, "a"), { code: "ERR_NOT_LEADER" });
    await until(async () => (await b.tryNow()).role === "leader", "b's takeover", {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    assert.equal(b.state.generation, 2);
    assert.equal((await a.tryNow()).role, "standby");
    assert.deepEqual(roles(heard), ["leader@1", "standby"], "a heard its loss, then saw b lead");
    assert.equal(heard.at(-1)?.leader, b.state.leader);
    assert.equal(a.state.leader, b.state.leader);
    await b.stop();
    await a.stop();
  });

  it("a deposed leader whose own clock still says it leads commits nothing (the database fences it)", async () => {
    const [p1, p2] = await database(2);
    const provider = randomUUID();
    // a's clock stands still, as in a process frozen since its last extension.
    const frozen: Clock = { ...systemClock, now: () => 1_000_000 };
    const a = lease(p1!, provider, { clock: frozen });
    const b = lease(p2!, provider);
    await a.tryNow();
    await write(a, "a");
    // Its lease lapses in the database meanwhile, and b takes over.
    await p1!.query("UPDATE fred_leader SET expires_at = clock_timestamp()");
    assert.equal((await b.tryNow()).role, "leader");
    assert.equal(a.isLeader(), true, "locally a still counts itself leader");
    await assert.rejects(write(a, "a"), { code: "ERR_NOT_LEADER" });
    assert.equal(a.state.role, "standby", "and stands down on the refusal");
    await write(b, "b");
    assert.deepEqual(await writes(p1!), ["a@1", "b@2"]);
    await b.stop();
  });

  it("a takeover waits for the leader's fenced transaction already under way, which commits first", async () => {
    const [p1, p2] = await database(2);
    const provider = randomUUID();
    const a = lease(p1!, provider);
    const b = lease(p2!, provider);
    await a.tryNow();
    let proceed!: () => void;
    const gate = new Promise<void>((r) => {
      proceed = r;
    });
    const slow = a.fenced(async (c) => {
      await gate;
      await c.query("INSERT INTO writes (instance, generation) VALUES ('a', 1)");
    });
    // The lease expires while the transaction holds its lock; b's attempt must wait for it.
    await new Promise((r) => setTimeout(r, TTL + 200));
    const takeover = b.tryNow();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(b.state.role, "standby", "b waits on the row lock");
    proceed();
    await slow;
    assert.equal((await takeover).role, "leader");
    await write(b, "b");
    assert.deepEqual(await writes(p1!), ["a@1", "b@2"]);
    await b.stop();
  });

  it("with the database down a leader keeps its lease until the TTL, then stands down; it leads again once the database is back", async () => {
    const [p1] = await database(1);
    const provider = randomUUID();
    const heard: LeaderState[] = [];
    // a's own deadline runs on a clock the test moves, so a slow halt (a shutdown
    // checkpoint on a loaded machine) cannot use it up before the first check.
    const clock = new ManualClock();
    const a = lease(p1!, provider, { heard, clock });
    await a.tryNow();
    server.halt();
    try {
      await a.tryNow(); // fails: logged, still leader inside its deadline
      assert.equal(a.state.role, "leader");
      clock.advance(TTL - 501);
      assert.equal(a.isLeader(), true, "still inside the local deadline (TTL less the clock margin)");
      clock.advance(1);
      assert.equal(a.isLeader(), false, "the local deadline passed");
      await a.tryNow();
      assert.equal(a.state.role, "standby");
    } finally {
      server.start();
    }
    await until(async () => (await a.tryNow()).role === "leader", "leading again", {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    assert.equal(a.state.generation, 2, "a new generation: its old lease had expired");
    assert.deepEqual(roles(heard), ["leader@1", "standby", "leader@2"]);
    await a.stop();
  });

  it("a leader process frozen past its lease (SIGSTOP) commits nothing once resumed, and becomes a standby", async () => {
    const db = await database(1);
    const [pool] = db;
    const url = db.url;
    const provider = randomUUID();
    const holder = fileURLToPath(new URL("lease-holder.ts", import.meta.url));
    const args = [url, provider, String(TTL), String(RENEW)];
    const a = await launchScript<{ instance: string }>(holder, args, { label: "holder a" });
    let b: Awaited<ReturnType<typeof launchScript<{ instance: string }>>> | undefined;
    try {
      await until(() => a.stdout().includes('"role":"leader"'), "a leads", { timeoutMs: 20_000 });
      b = await launchScript<{ instance: string }>(holder, args, { label: "holder b" });
      await until(async () => (await writes(pool!)).length >= 5, "a writes", { timeoutMs: 20_000 });
      a.signal("SIGSTOP");
      const frozenAt = Date.now();
      await until(() => b!.stdout().includes('"role":"leader"'), "b takes over", { timeoutMs: 20_000 });
      const takeover = Date.now() - frozenAt;
      // a stays frozen for twice the lease, then resumes with its timers and writes overdue.
      await new Promise((r) => setTimeout(r, Math.max(0, 2 * TTL - takeover)));
      a.signal("SIGCONT");
      await until(
        () =>
          a
            .stdout()
            .split("\n")
            .filter((l) => l.includes('"role":"standby"')).length >= 1,
        "a stands down",
        {
          timeoutMs: 20_000,
          context: () => a.stdout(),
        },
      );
      await new Promise((r) => setTimeout(r, 500));
      const rows = (
        await pool!.query<{ instance: string; generation: string; after: boolean }>(
          `SELECT instance, generation,
             at > (SELECT min(at) FROM writes WHERE instance = $1) AS after
           FROM writes`,
          [b!.ready.instance],
        )
      ).rows;
      const aRows = rows.filter((r) => r.instance === a.ready.instance);
      const bRows = rows.filter((r) => r.instance === b!.ready.instance);
      assert.ok(
        aRows.length >= 5 && bRows.length > 0,
        `both wrote while leading (a ${aRows.length}, b ${bRows.length})`,
      );
      assert.deepEqual(
        aRows.filter((r) => r.after),
        [],
        "nothing of a's committed after b's first write",
      );
      assert.deepEqual(new Set(aRows.map((r) => r.generation)), new Set(["1"]));
      assert.deepEqual(new Set(bRows.map((r) => r.generation)), new Set(["2"]));
      console.log(`takeover after SIGSTOP: ${takeover} ms (TTL ${TTL} ms, renewal every ${RENEW} ms)`);
    } finally {
      a.signal("SIGCONT");
      await a.kill();
      await b?.kill();
    }
  });

  it("refuses a renewal interval that does not fit twice in the lease", () => {
    assert.throws(
      () =>
        new LeaderLease({
          pool: {} as pg.Pool,
          providerUuid: randomUUID(),
          instance: "x",
          clock: systemClock,
          logger: silent,
          ttlMs: 1_000,
          renewMs: 600,
        }),
      { code: "ERR_INVALID_ARGUMENT" },
    );
  });
});
