import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningDockerBackend } from "../../../../src/backend/docker/main.ts";
import { instanceName, volumeDirName } from "../../../../src/backend/docker/names.ts";
import { dockerSkip, engineIdShift, execIn } from "../../../support/docker.ts";
import { type Receiver, startReceiver } from "../../kit/receiver.ts";
import { type SignedClient, signedClient } from "../../kit/signed-client.ts";
import {
  DISK_SKU,
  type DockerTestSetup,
  manifest,
  prepareDockerBackend,
  SECRET,
  startInProcess,
} from "../helpers.ts";
import { PROVIDER, provisionAndWait, provisionBody, TENANT } from "../provision-helper.ts";

/**
 * Retention on the real engine and btrfs: a file written in a lease's volume survives the
 * close as a read-only snapshot, is measured by its qgroup, and comes back inside a new
 * lease restored onto a larger tier; a smaller tier the data does not fit is refused with
 * 422 demote_exceeds_tier and the data stays retained.
 */
const skip = await dockerSkip({ btrfs: true, images: ["volume"] });
const BIG_SKU = "0190f3a2-7c1e-7000-8000-00000000d0b1";

describe("docker backend: retain on close and restore", { skip }, () => {
  let setup: DockerTestSetup;
  let backend: RunningDockerBackend;
  let rx: Receiver;
  let c: SignedClient;
  const image = manifest({ db: { image: "fred-test/volume:1" } });

  before(async () => {
    setup = prepareDockerBackend({
      retain_on_close: true,
      total_disk_mb: 512,
      sku_mapping: { [DISK_SKU]: "small-disk", [BIG_SKU]: "big-disk" },
      sku_profiles: {
        "small-disk": { cpu_cores: 0.1, memory_mb: 32, disk_mb: 16 },
        "big-disk": { cpu_cores: 0.1, memory_mb: 32, disk_mb: 64 },
      },
    });
    backend = await startInProcess(setup);
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
  });
  after(async () => {
    await backend?.close();
    await rx?.close();
    await setup?.cleanup();
  });

  const items = (sku: string) => [{ sku, quantity: 1, service_name: "db" }];
  const closeRetained = async (lease: string) => {
    assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${lease}:deprovisioned`), 60_000);
    const cb = rx.deliveries.find((d) => d.body.lease_uuid === lease && d.body.status === "deprovisioned");
    assert.equal(cb?.body.retained, true);
  };
  const restore = async (target: string, from: string, sku: string) => {
    const op = randomUUID();
    const url = `${rx.url}/callbacks/provision?operation_id=${op}`;
    const res = await c.post("/restore", {
      lease_uuid: target,
      from_lease_uuid: from,
      tenant: TENANT,
      provider_uuid: PROVIDER,
      items: items(sku),
      callback_url: url,
      lifecycle_callback_url: url.replace("operation_id", "lifecycle_id"),
    });
    return { res, op };
  };
  const retainedDir = () => join(setup.volumeRoot, ".fred-retained");

  it("a file written before the close is read back in a lease restored onto a larger tier", async () => {
    const first = provisionBody(rx, image, items(DISK_SKU));
    const source = first.lease;
    assert.equal((await provisionAndWait(c, rx, first)).status, "success");
    const write = await execIn(instanceName(source, "db", 0), "echo tenant-data > /data/keep.txt && sync");
    assert.equal(write.code, 0, write.out);
    await closeRetained(source);
    assert.equal(
      existsSync(join(setup.volumeRoot, instanceName(source, "db", 0))),
      false,
      "live volume gone",
    );
    assert.ok(
      readdirSync(retainedDir()).some((n) => n.includes(source)),
      "a retained snapshot exists",
    );
    const info = (await c.get(`/provisions/${source}`)).json as Record<string, unknown>;
    assert.equal(info.status, "retained");
    const page = (await c.get("/retentions")).json as { retentions: { lease_uuid: string }[] };
    assert.deepEqual(
      page.retentions.map((r) => r.lease_uuid),
      [source],
    );
    assert.ok(backend.engine.pool.stats().retained_disk_mb >= 1, "the snapshot's bytes count as retained");

    const target = randomUUID();
    const { res, op } = await restore(target, source, BIG_SKU);
    assert.equal(res.status, 202, res.text);
    await rx.waitFor((r) => r.deliveries.some((d) => d.callbackId === op), 60_000);
    const done = rx.deliveries.find((d) => d.callbackId === op);
    assert.equal(done?.body.status, "success", JSON.stringify(done?.body));
    const read = await execIn(instanceName(target, "db", 0), "cat /data/keep.txt");
    assert.equal(read.code, 0, read.out);
    assert.equal(read.out, "tenant-data\n");
    // The promote applied the new tier's limit: 40 MB fit where 16 MB would not.
    const big = await execIn(
      instanceName(target, "db", 0),
      "dd if=/dev/zero of=/data/fill bs=1M count=40 2>&1 && sync && rm /data/fill",
    );
    assert.equal(big.code, 0, big.out);
    // Container root wrote it: on a userns-remap engine that is the remapped host uid, not 0.
    const kept = statSync(
      join(setup.volumeRoot, instanceName(target, "db", 0), volumeDirName("/data"), "keep.txt"),
    );
    assert.deepEqual({ uid: kept.uid, gid: kept.gid }, (await engineIdShift()).root);
    // The adopted source's snapshot goes with the next sweep.
    await backend.retention?.sweep();
    assert.ok(!readdirSync(retainedDir()).some((n) => n.includes(source)), "the retained copy is destroyed");
    assert.equal((await c.get(`/provisions/${source}`)).status, 404);
  });

  it("refuses a demote the measured data does not fit, keeping the data", async () => {
    const first = provisionBody(rx, image, items(BIG_SKU));
    const source = first.lease;
    assert.equal((await provisionAndWait(c, rx, first)).status, "success");
    const fill = await execIn(
      instanceName(source, "db", 0),
      "dd if=/dev/urandom of=/data/big bs=1M count=24 2>&1 && sync",
    );
    assert.equal(fill.code, 0, fill.out);
    await closeRetained(source);
    const refused = await restore(randomUUID(), source, DISK_SKU);
    assert.equal(refused.res.status, 422, refused.res.text);
    assert.equal((refused.res.json as { code?: string }).code, "demote_exceeds_tier");
    const page = (await c.get("/retentions")).json as { retentions: { lease_uuid: string }[] };
    assert.ok(
      page.retentions.some((r) => r.lease_uuid === source),
      "still retained",
    );
    assert.ok(readdirSync(retainedDir()).some((n) => n.includes(source)));
  });
});
