import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Journal } from "../../../../src/backend/kit/journal/journal.ts";
import { restartRequestSchema } from "../../../../src/core/backend-contract/index.ts";
import { ManualClock } from "../../../../src/core/clock.ts";
import { SECRET } from "../../mock/helpers.ts";
import { type Receiver, startReceiver } from "../receiver.ts";
import { completions, type Harness, stamp, startHarness } from "./harness.ts";

/**
 * Release history across restarts of the backend (same journal file), its expiry after
 * releases_max_age on a ManualClock, and MOCK_BACKEND_FAIL_LEASES applied to restart and
 * update (the lease is provisioned first, then the backend restarts with the injection).
 */
type Body = Record<string, unknown>;
const HOUR = 3_600_000;

describe("releases and failure injection across backend restarts", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-maintenance-"));
  // One clock for the backends and the receiver, which checks signatures in that time.
  const clock = new ManualClock(Date.now());
  let rx: Receiver;
  const open: Harness[] = [];
  before(async () => {
    rx = await startReceiver(SECRET, () => clock.now());
  });
  after(async () => {
    for (const h of open) await h.close();
    await rx?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const start = async (env: Record<string, string>) => {
    const h = await startHarness(rx, env, clock);
    open.push(h);
    return h;
  };
  const stop = async (h: Harness) => {
    open.splice(open.indexOf(h), 1);
    await h.close();
  };
  const versions = async (h: Harness, lease: string) =>
    ((await h.c.get(`/releases/${lease}`)).json as Body[]).map((r) => [r.version, r.status]);

  it("history survives a restart; superseded and failed releases expire after releases_max_age", async () => {
    const storage = randomUUID();
    const env = {
      MOCK_BACKEND_DB_PATH: join(dir, "history.db"),
      MOCK_BACKEND_STORAGE_ID: storage,
      MOCK_BACKEND_RELEASES_MAX_AGE: "48h",
    };
    const lease = randomUUID();
    let h = await start(env);
    const url = await h.ready(lease);
    const bad = randomUUID();
    assert.equal((await h.update(lease, bad, "docker.io/library/nginx:fail", stamp(1))).status, 202);
    await h.drive(
      () => h.b.journal.outboxHead(lease) === undefined && completions(rx, bad).length > 0,
      "the failed update",
    );
    clock.advance(30 * HOUR);
    const good = randomUUID();
    assert.equal((await h.update(lease, good, "docker.io/library/nginx:1.27", stamp(2))).status, 202);
    await h.drive(
      () => h.b.journal.outboxHead(lease) === undefined && completions(rx, good).length > 0,
      "the good update",
    );
    await stop(h);

    h = await start(env);
    assert.deepEqual(await versions(h, lease), [
      [1, "superseded"],
      [2, "failed"],
      [3, "active"],
    ]);
    assert.equal(h.b.engine.expireReleases(), 0, "nothing is 48 h old yet");
    clock.advance(20 * HOUR); // v1 and v2 are 50 h old, v3 20 h
    assert.equal(h.b.engine.expireReleases(), 2);
    assert.deepEqual(await versions(h, lease), [[3, "active"]]);
    // The active release never expires, however old.
    clock.advance(1_000 * HOUR);
    assert.equal(h.b.engine.expireReleases(), 0);
    assert.deepEqual(await versions(h, lease), [[3, "active"]]);
    // Versions are never reused after expiry.
    const next = randomUUID();
    assert.equal((await h.update(lease, next, "docker.io/library/nginx:1.28", stamp(3), url)).status, 202);
    await h.drive(() => completions(rx, next).length > 0, "a later update");
    assert.deepEqual(await versions(h, lease), [
      [3, "superseded"],
      [4, "active"],
    ]);
  });

  it("MOCK_BACKEND_FAIL_LEASES fails a restart (lease failed, RestartFailed) and an update (rolled back)", async () => {
    const env = { MOCK_BACKEND_DB_PATH: join(dir, "inject.db"), MOCK_BACKEND_STORAGE_ID: randomUUID() };
    const [restarted, updated] = [randomUUID(), randomUUID()];
    let h = await start(env);
    await h.ready(restarted);
    await h.ready(updated);
    await stop(h);
    h = await start({ ...env, MOCK_BACKEND_FAIL_LEASES: `${restarted},${updated}` });
    const r = randomUUID();
    const u = randomUUID();
    const url = (lease: string) =>
      `${rx.url}/callbacks/provision?lifecycle_id=${h.b.journal.getLease(lease)?.operationId}`;
    assert.equal((await h.restart(restarted, r, stamp(1), url(restarted))).status, 202);
    assert.equal(
      (await h.update(updated, u, "docker.io/library/nginx:1.27", stamp(1), url(updated))).status,
      202,
    );
    await h.drive(() => completions(rx, r).length > 0 && completions(rx, u).length > 0, "both completions");
    assert.equal(completions(rx, r)[0]?.body.status, "failed");
    assert.equal(completions(rx, r)[0]?.body.error, "workload exited during restart");
    const a = (await h.c.get(`/provisions/${restarted}`)).json as Body;
    assert.deepEqual([a.status, a.reason], ["failed", "RestartFailed"]);
    assert.deepEqual(a.terminal_budget, { verdict: "retry", consecutive_failures: 0 }, "never counted");
    assert.equal(h.b.engine.pool.stats().allocated_cpu_cores, 0.5, "the failed lease released its capacity");
    assert.equal(completions(rx, u)[0]?.body.status, "failed");
    const b = (await h.c.get(`/provisions/${updated}`)).json as Body;
    assert.deepEqual([b.status, b.reason], ["ready", "UpdateFailed"]);
    assert.deepEqual(await versions(h, updated), [
      [1, "active"],
      [2, "failed"],
    ]);
  });

  it("a command journaled but never started (the process died right after the commit) runs at the next start", async () => {
    const storage = randomUUID();
    const env = { MOCK_BACKEND_DB_PATH: join(dir, "pending.db"), MOCK_BACKEND_STORAGE_ID: storage };
    const lease = randomUUID();
    let h = await start(env);
    const url = await h.ready(lease);
    await h.drive(() => h.b.journal.outboxHead(lease) === undefined, "the provision's callback delivered");
    await stop(h);
    // Exactly what admission commits before anything else happens, written while no backend runs.
    const j = new Journal({
      path: env.MOCK_BACKEND_DB_PATH,
      mode: "verify",
      storageId: storage,
      backendName: "x",
    });
    const id = randomUUID();
    try {
      const row = j.getLease(lease);
      assert.ok(row);
      const req = restartRequestSchema.parse({
        lease_uuid: lease,
        maintenance_id: id,
        callback_url: url,
        admitted_at: stamp(900),
      });
      const cmd = j.maintenance.admit({
        req,
        generation: row.generation,
        operationId: row.operationId,
        sourceRelease: row.release,
        image: row.image,
        nowMs: clock.now(),
      });
      assert.equal(cmd?.phase, "pending");
      await j.durable();
    } finally {
      j.close();
    }
    h = await start(env);
    assert.equal(((await h.c.get(`/provisions/${lease}`)).json as Body).status, "restarting");
    await h.drive(() => completions(rx, id).length > 0, "the resumed restart's completion");
    const [done, ...more] = completions(rx, id);
    assert.equal(more.length, 0);
    assert.deepEqual([done?.body.status, done?.body.maintenance_admitted_at], ["success", stamp(900)]);
    assert.equal(((await h.c.get(`/provisions/${lease}`)).json as Body).status, "ready");
  });
});
