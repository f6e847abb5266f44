/**
 * A leader-lease candidate as its own process, for the frozen-leader test: it campaigns
 * and extends on the lease's own timers and, while it leads, makes one fenced write every
 * 50 ms recording its generation. Prints a JSON ready line, then one line per role change.
 *
 *   node --import tsx lease-holder.ts <database url> <provider uuid> <ttl ms> <renew ms>
 */
import { randomUUID } from "node:crypto";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { openPostgres } from "../../../src/pg/open.ts";
import {
  LEADER_ADDRESS_MIGRATION,
  LEADER_LEASE_MIGRATION,
  LeaderLease,
} from "../../../src/provider/ha/leader-lease.ts";
import { WRITES_MIGRATION } from "./writes.ts";

const [url, provider, ttl, renew] = process.argv.slice(2);
const logger = createLogger("lease-holder", "silent");
const pool = await openPostgres({
  url: url!,
  label: "test store",
  migrations: [LEADER_LEASE_MIGRATION, LEADER_ADDRESS_MIGRATION, WRITES_MIGRATION],
  logger,
  idleInTransactionTimeoutMs: Number(ttl),
});
const instance = randomUUID();
const lease = new LeaderLease({
  pool,
  providerUuid: provider!,
  instance,
  clock: systemClock,
  logger,
  ttlMs: Number(ttl),
  renewMs: Number(renew),
  onChange: (s) => console.log(JSON.stringify({ role: s.role, generation: s.generation ?? null })),
});
console.log(JSON.stringify({ instance }));
lease.start();
setInterval(() => {
  if (!lease.isLeader()) return;
  void lease
    .fenced((c) =>
      c.query("INSERT INTO writes (instance, generation) VALUES ($1, $2)", [
        instance,
        lease.state.generation,
      ]),
    )
    .catch(() => {});
}, 50);
