/**
 * Takeover time of providerd on PostgreSQL (issue #36): two instances over one database
 * (test/provider/ha/cluster.ts: devnet, two mock backends, a TCP front). BENCH_KILLS times
 * (default 20), the leader is SIGKILLed; the figure is the time from the kill until the
 * other instance's /health says it leads (polled every 100 ms), then a lease created right
 * after the kill must become ACTIVE, and the killed instance comes back as a standby.
 * Goal: p50 and max ≤ 20 s with the defaults (TTL 15 s, renewal every 5 s). One JSON line.
 *
 * Usage: npm run bench -- providerd-takeover   (BENCH_KILLS=3 for a quick run)
 */
import { loadavg } from "node:os";
import { HaCluster } from "../test/provider/ha/cluster.ts";

const KILLS = Number(process.env.BENCH_KILLS ?? 20);

const ha = new HaCluster();
try {
  await ha.start();
  await ha.launch(0);
  await ha.waitReady(0, "leader");
  await ha.launch(1);
  await ha.waitReady(1, "standby");
  const takeovers: number[] = [];
  const toActive: number[] = [];
  for (let k = 0; k < KILLS; k++) {
    const leader = await ha.leaderIndex();
    const other = 1 - leader;
    const killedAt = performance.now();
    await ha.instances[leader]!.kill();
    ha.front.targets[leader] = 0; // nothing listens on port 0: connections go to the other
    const [lease] = (await ha.stack.createLeases(1, "docker-small")) as [string];
    await ha.waitRole(other, "leader", 120_000);
    takeovers.push(performance.now() - killedAt);
    await ha.stack.waitState([lease], "LEASE_STATE_ACTIVE", 120_000);
    toActive.push(performance.now() - killedAt);
    await ha.launch(leader);
    await ha.waitReady(leader, "standby");
    console.error(`kill ${k + 1}/${KILLS}: led after ${(takeovers.at(-1)! / 1000).toFixed(1)} s`);
  }
  const sorted = [...takeovers].sort((a, b) => a - b);
  const seconds = (ms: number) => Number((ms / 1000).toFixed(2));
  console.log(
    JSON.stringify({
      bench: "providerd_takeover",
      kills: KILLS,
      takeover_p50_s: seconds(sorted[Math.floor((sorted.length - 1) / 2)]!),
      takeover_max_s: seconds(sorted.at(-1)!),
      takeover_min_s: seconds(sorted[0]!),
      // A lease created just after the kill, until ACTIVE (the new leader's sweep and feed).
      lease_after_kill_to_active_p50_s: seconds(
        [...toActive].sort((a, b) => a - b)[Math.floor((toActive.length - 1) / 2)]!,
      ),
      goal_s: 20,
      ttl_s: 15,
      renew_s: 5,
      load1: Number(loadavg()[0]!.toFixed(2)),
    }),
  );
} finally {
  await ha.close();
}
