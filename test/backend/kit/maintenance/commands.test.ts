import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { SECRET } from "../../mock/helpers.ts";
import { type Receiver, startReceiver } from "../receiver.ts";
import { completions, type Harness, IMAGE, stamp, startHarness } from "./harness.ts";

/**
 * POST /restart and /update on the kit (the mock substrate, real HTTP and SQLite): the
 * 202 and the restarting/updating status from admission on, the exact completion, replay,
 * and every 409 the journal decides.
 */
type Body = Record<string, unknown>;
const status = async (h: Harness, lease: string) =>
  ((await h.c.get(`/provisions/${lease}`)).json as Body).status;

describe("restart and update commands", () => {
  let rx: Receiver;
  let h: Harness;
  before(async () => {
    rx = await startReceiver(SECRET);
    h = await startHarness(rx);
  });
  after(async () => {
    await h?.close();
    await rx?.close();
  });

  it("restart: 202 restarting, status restarting until done, one exact completion, the release kept", async () => {
    const lease = randomUUID();
    const url = await h.ready(lease);
    const id = randomUUID();
    const res = await h.restart(lease, id, stamp(1));
    assert.equal(res.status, 202, res.text);
    assert.deepEqual(res.json, { status: "restarting" });
    assert.equal(await status(h, lease), "restarting", "journaled before the 202");
    await h.drive(() => completions(rx, id).length > 0, "the restart's completion");
    const [done, ...more] = completions(rx, id);
    assert.equal(more.length, 0);
    assert.equal(done?.uri, url.slice(rx.url.length), "completions go to the lifecycle URL");
    assert.equal(done?.body.status, "success");
    assert.equal(done?.body.maintenance_admitted_at, stamp(1), "echoed verbatim");
    assert.equal(done?.body.backend, "mock-maintenance");
    assert.equal(await status(h, lease), "ready");
    const releases = (await h.c.get(`/releases/${lease}`)).json as Body[];
    assert.deepEqual(
      releases.map((r) => [r.version, r.status]),
      [[1, "active"]],
    );
    // Exact replay after settlement: the stored answer, no new work, no second completion.
    const replay = await h.restart(lease, id, stamp(1));
    assert.equal(replay.status, 202);
    assert.deepEqual(replay.json, { status: "restarting" });
    assert.equal(await status(h, lease), "ready");
    const logs = (await h.c.get(`/logs/${lease}`)).json as Record<string, string>;
    assert.match(logs["web/0"] ?? "", /after 1 restarts\/updates/);
    assert.equal(completions(rx, id).length, 1);
  });

  it("the same maintenance_id for another command or lease is 409; unknown lease 404; bad body 400", async () => {
    const lease = randomUUID();
    await h.ready(lease);
    const id = randomUUID();
    assert.equal((await h.restart(lease, id, stamp(10))).status, 202);
    await h.drive(() => completions(rx, id).length > 0, "the completion");
    const otherStamp = await h.restart(lease, id, stamp(11));
    assert.equal(otherStamp.status, 409);
    assert.match(String((otherStamp.json as Body).error), /different command/);
    const asUpdate = await h.update(lease, id, IMAGE, stamp(10));
    assert.equal(asUpdate.status, 409);
    const other = randomUUID();
    await h.ready(other);
    const elsewhere = await h.restart(other, id, stamp(10));
    assert.equal(elsewhere.status, 409);
    assert.match(String((elsewhere.json as Body).error), /another lease/);
    assert.equal(
      (await h.restart(randomUUID(), randomUUID(), stamp(12), "http://x/?lifecycle_id=1")).status,
      404,
    );
    const bad = await h.c.post("/restart", { lease_uuid: lease, maintenance_id: "nope" });
    assert.equal(bad.status, 400);
    assert.equal((bad.json as Body).error, "maintenance_id must be a canonical lowercase UUIDv4");
    const foreign = await h.restart(
      lease,
      randomUUID(),
      stamp(13),
      `${h.b.url}/elsewhere?lifecycle_id=${randomUUID()}`,
    );
    assert.equal(foreign.status, 409);
    assert.match(String((foreign.json as Body).error), /callback_url/);
  });

  it("orders commands: one at a time, none while a completion is queued, never an older stamp again", async () => {
    const lease = randomUUID();
    await h.ready(lease);
    const first = randomUUID();
    assert.equal((await h.restart(lease, first, stamp(20))).status, 202);
    // Pending (the mock's restart is held by its delay): a newer command is refused.
    const busy = await h.restart(lease, randomUUID(), stamp(21));
    assert.equal(busy.status, 409);
    assert.equal((busy.json as Body).code, undefined);
    assert.match(String((busy.json as Body).error), /restarting/);
    // Its completion cannot be delivered: a newer command waits for that too.
    rx.setMode(503);
    await h.drive(() => completions(rx, first).length > 0, "a refused delivery");
    assert.equal(await status(h, lease), "ready");
    const queued = await h.restart(lease, randomUUID(), stamp(22));
    assert.equal(queued.status, 409);
    assert.match(String((queued.json as Body).error), /still being delivered/);
    // The exact replay of the queued command still answers its 202.
    assert.equal((await h.restart(lease, first, stamp(20))).status, 202);
    rx.setMode(200);
    await h.drive(() => h.b.journal.outboxHead(lease) === undefined, "the completion delivered");
    // Older or equal stamps with a new key (no receipt) are expired, never run.
    for (const t of [stamp(19), stamp(20)]) {
      const late = await h.restart(lease, randomUUID(), t);
      assert.equal(late.status, 409, t);
      assert.equal((late.json as Body).code, "maintenance_expired");
    }
    const next = randomUUID();
    assert.equal((await h.restart(lease, next, stamp(23))).status, 202);
    await h.drive(() => completions(rx, next).some((d) => d.body.status === "success"), "the newer restart");
    // The mark never moves back: what the lease accepted, not what was refused.
    assert.equal(h.b.journal.maintenance.highWater(lease), "2026-12-01T10:00:00.000023000Z");
    // An unstamped command (an older providerd) has no mark to compare and runs.
    const unstamped = randomUUID();
    assert.equal((await h.restart(lease, unstamped)).status, 202);
    await h.drive(() => completions(rx, unstamped).length > 0, "the unstamped restart");
    assert.equal(completions(rx, unstamped)[0]?.body.maintenance_admitted_at, undefined);
  });

  it("refuses a command while a provision holds the lease, and on a lease that is not ready", async () => {
    const lease = randomUUID();
    const op = randomUUID();
    const res = await h.c.post("/provision", {
      lease_uuid: lease,
      tenant: "manifest1maintenance",
      provider_uuid: "01234567-89ab-7def-8123-456789abcdef",
      items: [{ sku: "0190f3a2-7c1e-7000-8000-00000000a001", quantity: 1 }],
      callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
    });
    assert.equal(res.status, 202);
    const lifecycle = `${rx.url}/callbacks/provision?lifecycle_id=${op}`;
    const during = await h.restart(lease, randomUUID(), stamp(70), lifecycle);
    assert.equal(during.status, 409);
    assert.match(String((during.json as Body).error), /provisioning/);
    await h.drive(() => h.b.journal.getLease(lease)?.status === "ready", "the provision");
    // Lost behind the kit's back: the lease is failed, and a restart is refused (nothing journaled).
    assert.equal((await h.c.post(`/_mock/lose/${lease}`, undefined)).status, 200);
    const id = randomUUID();
    const refused = await h.restart(lease, id, stamp(71), lifecycle);
    assert.equal(refused.status, 409);
    assert.match(String((refused.json as Body).error), /lease is failed/);
    assert.equal(h.b.journal.maintenance.get(id), undefined);
  });

  it("update: a new release becomes active, the old one superseded, the lease serves the new manifest", async () => {
    const lease = randomUUID();
    await h.ready(lease);
    const id = randomUUID();
    const image = "docker.io/library/nginx:1.27";
    const res = await h.update(lease, id, image, stamp(30));
    assert.equal(res.status, 202, res.text);
    assert.deepEqual(res.json, { status: "updating" });
    assert.equal(await status(h, lease), "updating");
    const during = (await h.c.get(`/releases/${lease}`)).json as Body[];
    assert.deepEqual(
      during.map((r) => [r.version, r.status]),
      [
        [1, "active"],
        [2, "deploying"],
      ],
    );
    await h.drive(() => completions(rx, id).length > 0, "the update's completion");
    assert.equal(completions(rx, id)[0]?.body.status, "success");
    const info = (await h.c.get(`/provisions/${lease}`)).json as Body;
    assert.equal(info.status, "ready");
    assert.equal(info.image, image);
    const releases = (await h.c.get(`/releases/${lease}`)).json as Body[];
    assert.deepEqual(
      releases.map((r) => [r.version, r.status, r.image]),
      [
        [1, "superseded", IMAGE],
        [2, "active", image],
      ],
    );
    const manifest = JSON.parse(Buffer.from(String(releases[1]?.manifest), "base64").toString());
    assert.equal(manifest.services.web.image, image);
    assert.equal(h.b.journal.getLease(lease)?.release, 2);
    const logs = (await h.c.get(`/logs/${lease}`)).json as Record<string, string>;
    assert.match(logs["web/0"] ?? "", /release 2 after 1 restarts\/updates/);
  });

  it("an update may send back the masked password /releases shows: the held one is kept, never shown", async () => {
    const lease = randomUUID();
    const doc = (image: string, password: string) =>
      Buffer.from(
        JSON.stringify({
          services: {
            web: { image, credentials: { host: "ghcr.io", username: "bot", password } },
          },
        }),
      );
    const url = await h.ready(lease, doc("ghcr.io/acme/app:1", "pull-secret"));
    const shown = (await h.c.get(`/releases/${lease}`)).json as Body[];
    const masked = Buffer.from(String(shown[0]?.manifest), "base64").toString();
    assert.doesNotMatch(masked, /pull-secret/);
    const id = randomUUID();
    const sent = Buffer.from(masked.replace("ghcr.io/acme/app:1", "ghcr.io/acme/app:2"));
    const res = await h.c.post("/update", {
      lease_uuid: lease,
      maintenance_id: id,
      callback_url: url,
      payload: sent.toString("base64"),
      admitted_at: stamp(40),
    });
    assert.equal(res.status, 202, res.text);
    await h.drive(() => completions(rx, id).length > 0, "the update's completion");
    assert.equal(completions(rx, id)[0]?.body.status, "success");
    const running = JSON.parse(String(h.b.journal.getLease(lease)?.payload));
    assert.equal(running.services.web.image, "ghcr.io/acme/app:2");
    assert.equal(running.services.web.credentials.password, "pull-secret", "the journal kept the real one");
    const after = JSON.stringify((await h.c.get(`/releases/${lease}`)).json);
    assert.doesNotMatch(Buffer.from(after).toString(), /pull-secret/);
    for (const r of (await h.c.get(`/releases/${lease}`)).json as Body[])
      assert.doesNotMatch(Buffer.from(String(r.manifest), "base64").toString(), /pull-secret/);
  });

  it("a failed update rolls back: release failed, the lease ready on the old one, reporting UpdateFailed", async () => {
    const lease = randomUUID();
    await h.ready(lease);
    const id = randomUUID();
    assert.equal((await h.update(lease, id, "docker.io/library/nginx:fail", stamp(40))).status, 202);
    await h.drive(() => completions(rx, id).length > 0, "the update's completion");
    const done = completions(rx, id)[0];
    assert.equal(done?.body.status, "failed");
    assert.equal(done?.body.error, "the new release failed to start; rolled back");
    assert.equal(done?.body.maintenance_admitted_at, stamp(40));
    const info = (await h.c.get(`/provisions/${lease}`)).json as Body;
    assert.equal(info.status, "ready");
    assert.equal(info.reason, "UpdateFailed");
    assert.equal(info.message, "the new release failed to start; rolled back");
    assert.equal(info.image, IMAGE, "still the old release");
    const releases = (await h.c.get(`/releases/${lease}`)).json as Body[];
    assert.deepEqual(
      releases.map((r) => [r.version, r.status, r.reason ?? null]),
      [
        [1, "active", null],
        [2, "failed", "UpdateFailed"],
      ],
    );
    assert.equal(h.b.journal.getLease(lease)?.release, 1);
    // The next update takes a version of its own, and a success clears the reported failure.
    const again = randomUUID();
    assert.equal((await h.update(lease, again, "docker.io/library/nginx:1.28", stamp(41))).status, 202);
    await h.drive(() => completions(rx, again).length > 0, "the second update");
    const after = (await h.c.get(`/provisions/${lease}`)).json as Body;
    assert.equal(after.status, "ready");
    assert.equal(after.reason, undefined);
    assert.deepEqual(
      ((await h.c.get(`/releases/${lease}`)).json as Body[]).map((r) => [r.version, r.status]),
      [
        [1, "superseded"],
        [2, "failed"],
        [3, "active"],
      ],
    );
  });

  it("a rolled-back update's logs stay readable as failed/<service>/<instance> until a later deployment", async () => {
    const lease = randomUUID();
    await h.ready(lease);
    const id = randomUUID();
    assert.equal((await h.update(lease, id, "docker.io/library/nginx:fail", stamp(60))).status, 202);
    await h.drive(() => completions(rx, id).length > 0, "the update's completion");
    const logs = (await h.c.get(`/logs/${lease}`)).json as Record<string, string>;
    assert.deepEqual(Object.keys(logs).sort(), ["failed/web/0", "web/0"]);
    assert.equal(logs["failed/web/0"], "mock web/0 release 2 failed to start\n");
    assert.match(logs["web/0"]!, /state running/, "the live keys are the restored release's");
    const good = randomUUID();
    assert.equal((await h.update(lease, good, "docker.io/library/nginx:1.28", stamp(61))).status, 202);
    await h.drive(() => completions(rx, good).length > 0, "the next update");
    assert.deepEqual(Object.keys((await h.c.get(`/logs/${lease}`)).json as object), ["web/0"]);
  });

  it("an update whose rollback fails too leaves the lease failed with UpdateFailed, not ready", async () => {
    const lease = randomUUID();
    await h.ready(lease);
    const id = randomUUID();
    const bad = "docker.io/library/nginx:fail-rollback";
    assert.equal((await h.update(lease, id, bad, stamp(50))).status, 202);
    await h.drive(() => completions(rx, id).length > 0, "the update's completion");
    const done = completions(rx, id)[0];
    assert.equal(done?.body.status, "failed");
    const message =
      "the update failed and the previous release could not be restored: workload exited during startup";
    assert.equal(done?.body.error, message);
    const info = (await h.c.get(`/provisions/${lease}`)).json as Body;
    assert.deepEqual([info.status, info.reason, info.message], ["failed", "UpdateFailed", message]);
    assert.deepEqual(
      ((await h.c.get(`/releases/${lease}`)).json as Body[]).map((r) => [r.version, r.status]),
      [
        [1, "active"],
        [2, "failed"],
      ],
    );
  });

  it("an update's manifest is validated like a provision's (400, nothing journaled)", async () => {
    const lease = randomUUID();
    await h.ready(lease);
    const id = randomUUID();
    const res = await h.update(lease, id, "quay.io/x/y:1", stamp(50));
    assert.equal(res.status, 400);
    assert.equal((res.json as Body).validation_code, "image_not_allowed");
    assert.equal(h.b.journal.maintenance.get(id), undefined);
    assert.equal(await status(h, lease), "ready");
  });

  it("a close pre-empts a pending restart: its failed completion first, then deprovisioned", async () => {
    const lease = randomUUID();
    const url = await h.ready(lease);
    const id = randomUUID();
    assert.equal((await h.restart(lease, id, stamp(60))).status, 202);
    assert.equal((await h.c.post("/deprovision", { lease_uuid: lease })).status, 200);
    await h.drive(() => rx.effects.includes(`lifecycle:${lease}:deprovisioned`), "the close");
    const onLease = rx.deliveries.filter((d) => d.uri === url.slice(rx.url.length));
    assert.deepEqual(
      onLease.map((d) => [d.body.status, d.body.maintenance_id ?? null]),
      [
        ["failed", id],
        ["deprovisioned", null],
      ],
    );
    assert.equal(h.b.journal.maintenance.get(id), undefined, "a close forgets the lease's receipts");
    assert.equal((await h.restart(lease, id, stamp(60))).status, 404);
  });
});
