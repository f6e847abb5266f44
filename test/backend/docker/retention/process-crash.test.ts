import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse, stringify } from "yaml";
import { instanceName } from "../../../../src/backend/docker/names.ts";
import { RetainedVolumes } from "../../../../src/backend/docker/retention/retained-volumes.ts";
import type { RetentionCrashPoint } from "../../../../src/backend/kit/index.ts";
import { dockerSkip, execIn } from "../../../support/docker.ts";
import { until } from "../../../support/index.ts";
import { type Receiver, startReceiver } from "../../kit/receiver.ts";
import { type SignedClient, signedClient } from "../../kit/signed-client.ts";
import {
  DISK_SKU,
  type DockerProcess,
  type DockerTestSetup,
  manifest,
  prepareDockerBackend,
  SECRET,
  spawnDockerBackend,
} from "../helpers.ts";
import { held, VOLUME_APP } from "../maintenance/harness.ts";
import { outboxDrained, PROVIDER, provisionAndWait, provisionBody, TENANT } from "../provision-helper.ts";

/**
 * The retention kill -9 matrix through the real `fred backend docker` process, its journal
 * and btrfs: one crash point armed per process life (FRED_FAILPOINTS), the next life
 * resuming what the last one left. A retaining close is killed after the containers go,
 * after the snapshot, after its row commits; restores are killed after the clone, after
 * the adoption, after the source row is consumed; the reaper after marking an expired row
 * and after deleting its snapshot. After each restart the data is in exactly one place —
 * retained under the source, or in the one destination that committed — never lost and
 * never both; every callback is delivered exactly once.
 */
const skip = await dockerSkip({ btrfs: true, images: ["volume"] });

describe("docker backend process: kill -9 at each step of retain, restore and reap", { skip }, () => {
  let setup: DockerTestSetup;
  let rx: Receiver;
  let proc: DockerProcess | undefined;
  let c: SignedClient;
  const items = [{ sku: DISK_SKU, quantity: 1, service_name: "db" }];
  const app = manifest({ db: VOLUME_APP });

  before(async () => {
    setup = prepareDockerBackend({ retain_on_close: true });
    rx = await startReceiver(SECRET);
  });
  after(async () => {
    await proc?.kill();
    await rx?.close();
    await setup?.cleanup();
  });

  /** A new process life with `point` armed (none: a clean life). */
  const life = async (point?: RetentionCrashPoint) => {
    proc = await spawnDockerBackend(setup.configPath, 60_000, point ? { FRED_FAILPOINTS: point } : {});
    c = signedClient(proc.ready.url, SECRET);
  };
  /** The armed point fired: the process died by SIGKILL. */
  const died = async () => {
    const exit = await (proc as DockerProcess).waitExit(120_000);
    assert.equal(exit.signal, "SIGKILL", (proc as DockerProcess).logTail());
  };
  /** A life whose point fires while it resumes the last one's work (maybe before it is ready). */
  const resumesAndDies = async (point: RetentionCrashPoint) => {
    try {
      await life(point);
    } catch (err) {
      assert.match(String(err), /exited with SIGKILL before it was ready/);
      return;
    }
    await died();
  };
  const drained = () => outboxDrained((proc as DockerProcess).ready.url);
  const callbacks = (lease: string, status: string) =>
    rx.deliveries.filter((d) => d.body.lease_uuid === lease && d.body.status === status);
  const retentions = async () =>
    ((await c.get("/retentions")).json as { retentions: { lease_uuid: string }[] }).retentions.map(
      (r) => r.lease_uuid,
    );
  const snapshot = (lease: string) =>
    join(setup.volumeRoot, ".fred-retained", RetainedVolumes.nameOf(lease, "db", 0));
  const liveVolume = (lease: string) => join(setup.volumeRoot, instanceName(lease, "db", 0));
  const restoreBody = (target: string, from: string) => {
    const url = `${rx.url}/callbacks/provision?operation_id=${randomUUID()}`;
    return {
      lease_uuid: target,
      from_lease_uuid: from,
      tenant: TENANT,
      provider_uuid: PROVIDER,
      items,
      callback_url: url,
      lifecycle_callback_url: url.replace("operation_id", "lifecycle_id"),
    };
  };
  /** The crash point may fire before the answer leaves: the request is journaled either way. */
  const post = async (path: string, body: unknown) => {
    const res = await c.post(path, body).catch(() => undefined);
    if (res) assert.ok([200, 202].includes(res.status), res.text);
  };

  /** The source still holds the data, and nothing else does. */
  const retainedOnly = async (source: string, failed: string[]) => {
    assert.ok((await retentions()).includes(source), "the source is retained");
    assert.equal(((await c.get(`/provisions/${source}`)).json as { status: string }).status, "retained");
    assert.ok(existsSync(snapshot(source)), "its snapshot is there");
    assert.ok(!existsSync(liveVolume(source)), "its live volume is gone");
    assert.deepEqual(await held(source), [], "no container of the source");
    for (const dest of failed) {
      assert.deepEqual(await held(dest), [], `no container of the failed destination ${dest}`);
      assert.ok(!existsSync(liveVolume(dest)), `the failed destination's copy ${dest} is discarded`);
      assert.equal(callbacks(dest, "failed").length, 1, "one failure callback");
      assert.equal(callbacks(dest, "success").length, 0);
    }
  };

  it("the data ends retained xor restored, never lost; callbacks once", async () => {
    // A clean life: the lease whose data goes through the matrix, and one for the reaper.
    await life();
    const first = provisionBody(rx, app, items);
    const source = first.lease;
    assert.equal((await provisionAndWait(c, rx, first)).status, "success");
    const write = await execIn(instanceName(source, "db", 0), "echo tenant-data > /data/keep.txt && sync");
    assert.equal(write.code, 0, write.out);
    const doomed = provisionBody(rx, app, items);
    assert.equal((await provisionAndWait(c, rx, doomed)).status, "success");
    await post("/deprovision", { lease_uuid: doomed.lease });
    await rx.waitFor(() => callbacks(doomed.lease, "deprovisioned").length > 0, 60_000);
    await drained();
    await proc?.kill();

    // Close with retain: killed after the containers go, after the snapshot, after the commit.
    await life("retention.close.after-remove");
    await post("/deprovision", { lease_uuid: source });
    await died();
    await resumesAndDies("retention.close.after-snapshot"); // recovery resumes the close
    await resumesAndDies("retention.close.after-commit");
    await life("retention.restore.after-clone");
    await rx.waitFor(() => callbacks(source, "deprovisioned").length > 0, 60_000);
    await drained();
    const closed = callbacks(source, "deprovisioned");
    assert.equal(closed.length, 1, "one close callback");
    assert.equal(closed[0]?.body.retained, true);
    await retainedOnly(source, []);

    // Restores killed after the clone and after the adoption: recovery settles each as
    // RestoreFailed, discards its copy and hands the data back to the source.
    const failed: string[] = [];
    for (const next of ["retention.restore.after-adopt", "retention.restore.after-consume"] as const) {
      const dest = randomUUID();
      failed.push(dest);
      await post("/restore", restoreBody(dest, source));
      await died();
      await life(next);
      await rx.waitFor(() => callbacks(dest, "failed").length > 0, 60_000);
      await drained();
      await retainedOnly(source, failed);
    }

    // The third restore commits; killed once the source row is consumed.
    const target = randomUUID();
    await post("/restore", restoreBody(target, source));
    await died();
    await life();
    await rx.waitFor(() => callbacks(target, "success").length > 0, 60_000);
    await drained();
    assert.equal(callbacks(target, "success").length, 1, "one success callback");
    assert.equal(((await c.get(`/provisions/${target}`)).json as { status: string }).status, "ready");
    const read = await execIn(instanceName(target, "db", 0), "cat /data/keep.txt");
    assert.equal(read.out, "tenant-data\n", read.out);
    assert.ok(!(await retentions()).includes(source), "the source is no longer restorable");
    // The consumed source's snapshot goes with a sweep of this life.
    await until(() => !existsSync(snapshot(source)), "the consumed snapshot deleted", { timeoutMs: 60_000 });
    assert.equal((await c.get(`/provisions/${source}`)).status, 404);
    await proc?.kill();

    // The reaper: the other lease's data expires (a 1 s age limit from here on), killed
    // after the row is marked and after its snapshot is deleted.
    const doc = parse(readFileSync(setup.configPath, "utf8")) as Record<string, unknown>;
    writeFileSync(setup.configPath, stringify({ ...doc, retention_max_age: "1s" }));
    assert.ok(existsSync(snapshot(doomed.lease)), "the reaper's lease is retained");
    await resumesAndDies("retention.reap.after-mark"); // the first sweep runs at startup
    await resumesAndDies("retention.reap.after-delete");
    await life();
    await until(async () => !(await retentions()).includes(doomed.lease), "the expired row removed", {
      timeoutMs: 60_000,
    });
    assert.ok(!existsSync(snapshot(doomed.lease)), "the expired snapshot is deleted");
    assert.equal((await c.get(`/provisions/${doomed.lease}`)).status, 404);
    // The restored lease is untouched by all of it.
    assert.equal((await execIn(instanceName(target, "db", 0), "cat /data/keep.txt")).out, "tenant-data\n");
    assert.equal(callbacks(doomed.lease, "deprovisioned").length, 1);
    assert.equal(callbacks(source, "deprovisioned").length, 1);
  });
});
