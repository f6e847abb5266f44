import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import Fastify, { type FastifyInstance } from "fastify";
import type pg from "pg";
import { ManualClock, systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { openPostgres } from "../../../src/pg/open.ts";
import { INBOX_MIGRATION, InboxIntake, InboxSender, serveThrough } from "../../../src/provider/ha/inbox.ts";
import {
  LEADER_ADDRESS_MIGRATION,
  LEADER_LEASE_MIGRATION,
  LeaderLease,
} from "../../../src/provider/ha/leader-lease.ts";
import { type StandbyServer, serveStandby } from "../../../src/provider/ha/standby.ts";
import { bindApiSocket } from "../../../src/provider/http/bind.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../../support/postgres.ts";
import { until } from "../../support/until.ts";

/**
 * The inbox (ha/inbox.ts) over a real PostgreSQL: a standby whose leader's address refuses
 * every connection (cut off from it) journals what it receives; leaders with real leases
 * (short TTL) take it, fenced, and serve it through a real Fastify app's routes.
 */
const silent = createLogger("inbox-test", "silent");
const TTL = 1_500;
const RENEW = 500;
const MAX_BODY = 1_024;
/** Nothing listens on port 1 here: every connection is refused. */
const CUT_OFF = "http://127.0.0.1:1";

describe("requests journaled in PostgreSQL for the leader", { skip: skipWithoutPostgres }, () => {
  let server: TestPostgres;
  let pool: pg.Pool;
  const provider = randomUUID();
  let standby: StandbyServer;
  let sender: InboxSender;
  /** The standby's view of the lease: who leads (it cannot reach that instance's address). */
  let leaderSeen: string | undefined;
  const cleanup: (() => Promise<void>)[] = [];

  before(async () => {
    server = await startPostgres();
    pool = await openPostgres({
      url: server.createDatabase("inbox"),
      label: "inbox test",
      migrations: [LEADER_LEASE_MIGRATION, LEADER_ADDRESS_MIGRATION, INBOX_MIGRATION],
      logger: silent,
    });
    const instance = randomUUID();
    sender = new InboxSender({
      pool,
      providerUuid: provider,
      instance,
      maxBodyBytes: MAX_BODY,
      answerWaitMs: 4_000,
      clock: systemClock,
      logger: silent,
    });
    standby = await serveStandby(await bindApiSocket("127.0.0.1:0", "http"), {
      providerUuid: provider,
      instance,
      leadership: () => ({ role: "standby", generation: undefined, leader: leaderSeen }),
      leaderAddress: () => (leaderSeen === undefined ? undefined : CUT_OFF),
      leaseRead: () => true,
      databaseOk: async () => true,
      listener: {
        maxRequestBodySize: MAX_BODY,
        readTimeoutMs: 2_000,
        writeTimeoutMs: 2_000,
        idleTimeoutMs: 60_000,
        trustedProxies: [],
        rateLimit: { rps: 100, burst: 100 },
        corsOrigins: ["*"],
        tls: undefined,
      },
      holdMs: 3_000,
      inbox: sender,
      clock: systemClock,
      logger: silent,
    });
  });
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => {});
    await standby?.close();
    await sender?.close();
    await pool?.end();
    server?.stop();
  });

  /** A leader: its lease (taken now), the routes it serves and what they received, its intake (not started). */
  async function leader(o: { hold?: Promise<void>; renew?: boolean; intakeClock?: ManualClock } = {}) {
    const lease = new LeaderLease({
      pool,
      providerUuid: provider,
      instance: randomUUID(),
      clock: systemClock,
      logger: silent,
      ttlMs: TTL,
      renewMs: RENEW,
    });
    await until(async () => (await lease.tryNow()).role === "leader", "the test's instance leads");
    if (o.renew !== false) lease.start();
    leaderSeen = lease.instance;
    const received: { method: string; url: string; body: string; ip: string; forwardedFor: unknown }[] = [];
    const app = Fastify({ bodyLimit: MAX_BODY }) as unknown as FastifyInstance;
    app.addContentTypeParser("application/octet-stream", { parseAs: "buffer" }, (_r, body, done) =>
      done(null, body),
    );
    app.all("/*", async (req, reply) => {
      received.push({
        method: req.method,
        url: req.url,
        body: Buffer.isBuffer(req.body) ? req.body.toString() : "",
        ip: req.socket.remoteAddress ?? "",
        forwardedFor: req.headers["x-forwarded-for"],
      });
      await o.hold;
      return reply.code(201).header("x-leader", lease.instance).send({ served: received.length });
    });
    await app.ready();
    const intake = new InboxIntake({
      pool,
      fence: (work) => lease.fenced(work),
      providerUuid: provider,
      instance: lease.instance,
      serve: (r) => serveThrough(app, r),
      clock: o.intakeClock ?? systemClock,
      logger: silent,
    });
    const stop = async () => {
      await intake.stop();
      await lease.stop();
      await app.close();
    };
    cleanup.push(stop);
    return { lease, app, intake, received, stop };
  }

  /** The sessions that LISTEN for journaled requests (the intake's; the standby listens for answers). */
  const listeningBackends = async () =>
    (
      await pool.query(
        "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN fred_inbox' AND state = 'idle' AND datname = current_database()",
      )
    ).rows;

  const rows = async () =>
    Number((await pool.query<{ n: string }>("SELECT count(*) AS n FROM fred_inbox")).rows[0]!.n);

  const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${standby.url}${path}`, {
      method: "POST",
      body,
      headers: { "content-type": "application/octet-stream", ...headers },
    });

  it("a request the leader's address refuses is journaled, served once by the leader's routes, and its answer comes back", async () => {
    const l = await leader();
    l.intake.start();
    const res = await post("/v1/leases/x/restart?now=1", "the body", { "x-forwarded-for": "203.0.113.9" });
    assert.equal(res.status, 201);
    assert.deepEqual(await res.json(), { served: 1 });
    assert.equal(res.headers.get("x-leader"), l.lease.instance);
    assert.deepEqual(l.received, [
      {
        method: "POST",
        url: "/v1/leases/x/restart?now=1",
        body: "the body",
        // The client's own address and forwarding header, as if it had reached the leader.
        ip: "127.0.0.1",
        forwardedFor: "203.0.113.9",
      },
    ]);
    // A read goes the same way.
    const read = await fetch(`${standby.url}/v1/provider`);
    assert.equal(read.status, 201);
    assert.equal(l.received.length, 2);
    await until(async () => (await rows()) === 0, "the answered rows removed");
    await l.stop();
  });

  it("the leader hears of a journaled request by NOTIFY (its slow look never comes here), also after its listening connection is cut", async () => {
    // The intake's clock does not move: no timed look, no timed reconnection, unless advanced.
    const clock = new ManualClock();
    const l = await leader({ intakeClock: clock });
    l.intake.start();
    // Until it listens, a request waits for the next look (none here): let it listen first.
    await until(async () => (await listeningBackends()).length === 1, "the intake listens");
    const first = await post("/v1/leases/x/restart", "heard");
    assert.equal(first.status, 201);
    await pool.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN fred_inbox'",
    );
    await until(async () => (await listeningBackends()).length === 0, "the listening connection cut");
    clock.advance(1_000); // its reconnection, after RELISTEN_MS
    await until(async () => (await listeningBackends()).length === 1, "the intake listens again");
    const second = await post("/v1/leases/x/restart", "heard again");
    assert.equal(second.status, 201);
    assert.deepEqual(
      l.received.map((r) => r.body),
      ["heard", "heard again"],
    );
    await l.stop();
    assert.equal((await listeningBackends()).length, 0, "a stopped intake listens no more");
  });

  it("a body over max_request_body_size reaches the leader cut one byte past it, and its routes refuse it as they would the whole", async () => {
    const l = await leader();
    l.intake.start();
    const res = await post("/v1/leases/x/data", Buffer.alloc(MAX_BODY * 5, 7));
    assert.equal(res.status, 413);
    assert.equal(l.received.length, 0, "the route never ran");
    await l.stop();
  });

  it("a request no leader takes within the hold is withdrawn: 503 with Retry-After, and no later leader runs it", async () => {
    const l = await leader();
    const res = await post("/v1/leases/x/restart", "");
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "2");
    assert.equal(await rows(), 0, "withdrawn");
    // The standby counts how its journaled requests ended (five answered by the cases before).
    const metrics = await (await fetch(`${standby.url}/metrics`)).text();
    assert.match(metrics, /^fred_standby_journaled_requests_total\{outcome="withdrawn"\} 1$/m);
    assert.match(metrics, /^fred_standby_journaled_requests_total\{outcome="answered"\} 5$/m);
    assert.match(metrics, /^fred_standby_journaled_requests_total\{outcome="unanswered"\} 0$/m);
    l.intake.start();
    await l.intake.takeNow();
    assert.equal(l.received.length, 0);
    await l.stop();
  });

  it("a request taken by a leader that loses its lease before answering: the next leader answers 503, never runs it again; the old one's answer is refused", async () => {
    let release: () => void = () => {};
    const first = await leader({ hold: new Promise<void>((r) => (release = r)) });
    first.intake.start();
    const answered = post("/v1/leases/x/restart", "once");
    await until(async () => first.received.length === 1, "the first leader runs it");
    // The first leader loses its lease (here it gives it up) and another instance leads.
    await first.lease.stop();
    const second = await leader();
    second.intake.start();
    const res = await answered;
    assert.equal(res.status, 503);
    assert.match(((await res.json()) as { error: string }).error, /stopped leading before answering/);
    assert.equal(second.received.length, 0, "not run twice");
    release();
    await first.stop();
    assert.equal(second.received.length, 0);
    await second.stop();
  });

  it("a deposed leader takes nothing: the rows stay for the instance that leads", async () => {
    const old = await leader({ renew: false });
    // Its lease lapses in the database (as for a leader cut off from it) and another leads;
    // `old` still believes it leads until its local deadline, but the database fences it.
    await pool.query("UPDATE fred_leader SET expires_at = clock_timestamp()");
    const next = await leader();
    const pending = post("/v1/leases/x/restart", "for the leader");
    await until(async () => (await rows()) === 1, "journaled");
    await old.intake.takeNow();
    assert.equal(old.received.length, 0, "the deposed leader took nothing");
    next.intake.start();
    const res = await pending;
    assert.equal(res.status, 201);
    assert.equal(next.received.length, 1);
    await Promise.all([old.stop(), next.stop()]);
  });
});
