/**
 * Takeover time of providerd on PostgreSQL (issue #36): two instances over one database
 * (test/provider/ha/cluster.ts: devnet, two mock backends, a TCP front). BENCH_KILLS times
 * (default 20), the leader is SIGKILLed; two figures from the kill:
 * - `takeover`: until the lease row in PostgreSQL names another holder (polled every
 *   50 ms): the moment the other instance leads. Goal: p50 and max ≤ 20 s with the
 *   defaults (TTL 15 s, renewal every 5 s).
 * - `ready`: until that instance's /readyz answers 200 as the leader (polled every 100 ms):
 *   its daemon started, recovered and serving.
 * - `read`: a tenant read (GET /v1/provider) sent through the front right after the kill,
 *   so to the standby, until answered: the standby holds it until the new leader serves;
 *   `reads_refused` counts those answered anything but 200 (goal 0).
 * Then a lease created right after the kill must become ACTIVE, and the killed instance
 * comes back as a standby.
 * After the kills, BENCH_READS (default 200) tenant reads, one every 20 ms on a kept-alive
 * connection, each way: to the leader; to the standby, which forwards them; and to the
 * standby cut off from the leader's address (the lease row names an address that refuses),
 * which journals them in PostgreSQL for the leader (ha/inbox.ts): p50/p99 of each, and how
 * many the inbox carried (its NOTIFYs, heard here). One JSON line.
 *
 * Usage: npm run bench -- providerd-takeover   (BENCH_KILLS=3 for a quick run)
 */
import { Agent, get } from "node:http";
import { loadavg } from "node:os";
import pg from "pg";
import { HaCluster } from "../test/provider/ha/cluster.ts";

const KILLS = Number(process.env.BENCH_KILLS ?? 20);
const READS = Number(process.env.BENCH_READS ?? 200);

const ha = new HaCluster();
try {
  await ha.start();
  await ha.launch(0);
  await ha.waitReady(0, "leader");
  await ha.launch(1);
  await ha.waitReady(1, "standby");
  const db = new pg.Client({ connectionString: ha.databaseUrl });
  await db.connect();
  const holder = async () =>
    (await db.query<{ holder: string }>("SELECT holder FROM fred_leader")).rows[0]?.holder;
  const takeovers: number[] = [];
  const readies: number[] = [];
  const toActive: number[] = [];
  const reads: number[] = [];
  let readsRefused = 0;
  for (let k = 0; k < KILLS; k++) {
    const leader = await ha.leaderIndex();
    const other = ha.otherThan(leader);
    const was = await holder();
    const killedAt = performance.now();
    await ha.instances[leader]!.kill();
    ha.front.targets[leader] = 0; // nothing listens on port 0: connections go to the other
    const created = ha.stack.createLeases(1, "docker-small");
    const read = readOnNewConnection(`${ha.front.url}/v1/provider`);
    while ((await holder()) === was) await new Promise((resolve) => setTimeout(resolve, 50));
    takeovers.push(performance.now() - killedAt);
    const [lease] = (await created) as [string];
    await ha.waitReady(other, "leader");
    readies.push(performance.now() - killedAt);
    const answered = await read;
    reads.push(answered.at - killedAt);
    if (answered.status !== 200) readsRefused++;
    await ha.stack.waitState([lease], "LEASE_STATE_ACTIVE", 120_000);
    toActive.push(performance.now() - killedAt);
    await ha.launch(leader);
    await ha.waitReady(leader, "standby");
    console.error(
      `kill ${k + 1}/${KILLS}: led after ${seconds(takeovers.at(-1)!)} s, ready after ${seconds(readies.at(-1)!)} s, a read sent at the kill answered after ${seconds(reads.at(-1)!)} s (${(await read).status})`,
    );
  }
  // Reads each way: to the leader, forwarded by the standby, journaled by a cut-off standby.
  const leaderAt = await ha.leaderIndex();
  const standbyUrl = `${ha.url(ha.otherThan(leaderAt))}/v1/provider`;
  const direct = await timedReads(`${ha.url(leaderAt)}/v1/provider`);
  const forwarded = await timedReads(standbyUrl);
  let journaled = 0;
  db.on("notification", () => journaled++);
  await db.query("LISTEN fred_inbox");
  const { rows } = await db.query<{ address: string }>("SELECT address FROM fred_leader");
  await db.query("UPDATE fred_leader SET address = 'http://127.0.0.1:1'");
  // The standby reads the lease row again within a renewal period (5 s).
  await new Promise((resolve) => setTimeout(resolve, 6_000));
  journaled = 0;
  const relayed = await timedReads(standbyUrl);
  await db.query("UPDATE fred_leader SET address = $1", [rows[0]!.address]);
  await db.end();
  const takeover = spread(takeovers);
  const ready = spread(readies);
  console.log(
    JSON.stringify({
      bench: "providerd_takeover",
      kills: KILLS,
      takeover_p50_s: takeover.p50,
      takeover_max_s: takeover.max,
      takeover_min_s: takeover.min,
      ready_p50_s: ready.p50,
      ready_max_s: ready.max,
      // A tenant read sent to the standby at the kill: held, then answered by the new leader.
      read_at_kill_answered_p50_s: spread(reads).p50,
      read_at_kill_answered_max_s: spread(reads).max,
      reads_refused: readsRefused,
      // A lease created just after the kill, until ACTIVE (the new leader's sweep and feed).
      lease_after_kill_to_active_p50_s: spread(toActive).p50,
      // Tenant reads (GET /v1/provider), ms: to the leader, through the standby, through the inbox.
      reads: READS,
      read_leader_ms: direct.ms,
      read_forwarded_ms: forwarded.ms,
      read_journaled_ms: relayed.ms,
      reads_not_200: direct.failed + forwarded.failed + relayed.failed,
      inbox_carried: journaled,
      goal_s: 20,
      ttl_s: 15,
      renew_s: 5,
      load1: Number(loadavg()[0]!.toFixed(2)),
    }),
  );
} finally {
  await ha.close();
}

/**
 * GET `url` on a connection of its own (a kept-alive one would still lead, through the
 * front, to the instance just killed): its status (0 if it failed) and when it ended.
 */
function readOnNewConnection(url: string): Promise<{ status: number; at: number }> {
  return new Promise((resolve) => {
    const req = get(url, { agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, at: performance.now() }));
    });
    req.on("error", () => resolve({ status: 0, at: performance.now() }));
  });
}

/** READS GETs of `url`, one every 20 ms on one kept-alive connection: p50/p99 ms, and those not answered 200. */
async function timedReads(url: string): Promise<{ ms: { p50: number; p99: number }; failed: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const took: number[] = [];
  let failed = 0;
  for (let i = 0; i < READS; i++) {
    const started = performance.now();
    const status = await new Promise<number>((resolve) => {
      const req = get(url, { agent }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", () => resolve(0));
    });
    took.push(performance.now() - started);
    if (status !== 200) failed++;
    const rest = 20 - (performance.now() - started);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
  agent.destroy();
  took.sort((a, b) => a - b);
  const at = (q: number) => Number(took[Math.min(took.length - 1, Math.floor(q * took.length))]!.toFixed(2));
  return { ms: { p50: at(0.5), p99: at(0.99) }, failed };
}

function seconds(ms: number): number {
  return Number((ms / 1000).toFixed(2));
}

function spread(ms: number[]): { p50: number; max: number; min: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    p50: seconds(sorted[Math.floor((sorted.length - 1) / 2)]!),
    max: seconds(sorted.at(-1)!),
    min: seconds(sorted[0]!),
  };
}
