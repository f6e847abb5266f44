import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningDockerBackend } from "../../../src/backend/docker/main.ts";
import { instanceName, volumeDirName } from "../../../src/backend/docker/names.ts";
import { dockerCli, dockerSkip, execIn } from "../../support/docker.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import {
  DISK_SKU,
  type DockerTestSetup,
  manifest,
  prepareDockerBackend,
  SECRET,
  startInProcess,
} from "./helpers.ts";
import { outboxDrained, provisionAndWait, provisionBody } from "./provision-helper.ts";

/**
 * A lease's durable volume outlives its failed releases: a runtime death, a provision
 * that fails (health check) and the provision that follows each remove the previous
 * release's containers, never the volume or the tenant data in it. Only the close
 * destroys it.
 */
const skip = await dockerSkip({ btrfs: true, images: ["volume"] });

describe("docker backend: volumes across failure and re-provision", { skip }, () => {
  let setup: DockerTestSetup;
  let backend: RunningDockerBackend;
  let rx: Receiver;
  let c: SignedClient;
  const items = [{ sku: DISK_SKU, quantity: 1, service_name: "db" }];
  const plain = manifest({ db: { image: "fred-test/volume:1" } });
  const neverHealthy = manifest({
    db: {
      image: "fred-test/volume:1",
      health_check: { test: ["CMD", "test", "-f", "/nonexistent"], interval: "200ms", retries: 2 },
    },
  });

  before(async () => {
    setup = prepareDockerBackend({ startup_verify_duration: "500ms" });
    backend = await startInProcess(setup);
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
  });
  after(async () => {
    await backend?.close();
    await rx?.close();
    await setup?.cleanup();
  });

  it("a file written in the volume survives a failure, a failed re-provision and the next one", async () => {
    const first = provisionBody(rx, plain, items);
    const lease = first.lease;
    const container = instanceName(lease, "db", 0);
    const hostFile = join(setup.volumeRoot, container, volumeDirName("/data"), "keep.txt");
    assert.equal((await provisionAndWait(c, rx, first)).status, "success");
    const write = await execIn(container, "echo tenant-data > /data/keep.txt && sync");
    assert.equal(write.code, 0, write.out);
    await outboxDrained(backend.url);

    // Release 1 dies at runtime: the lease is failed, its volume untouched.
    const kill = await dockerCli(["kill", container]);
    assert.equal(kill.code, 0, kill.out);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${lease}:failed`), 30_000);
    assert.equal(readFileSync(hostFile, "utf8"), "tenant-data\n");

    // Release 2 fails its health check: its containers are stopped, the data stays.
    const second = provisionBody(rx, neverHealthy, items, { lease });
    const failed = await provisionAndWait(c, rx, second);
    assert.equal(failed.status, "failed", JSON.stringify(failed));
    assert.equal(readFileSync(hostFile, "utf8"), "tenant-data\n", "a failed release keeps the volume");

    // Release 3 replaces release 2's containers and finds the data where the tenant left it.
    const third = provisionBody(rx, plain, items, { lease });
    assert.equal((await provisionAndWait(c, rx, third)).status, "success");
    const read = await execIn(container, "cat /data/keep.txt");
    assert.equal(read.code, 0, read.out);
    assert.equal(read.out, "tenant-data\n");
    const labels = await dockerCli([
      "inspect",
      "--format",
      '{{index .Config.Labels "fred.release"}}',
      container,
    ]);
    assert.equal(labels.out.trim(), "3", "the running container is release 3's");

    // The close is what destroys the volume.
    assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${lease}:deprovisioned`), 60_000);
    assert.equal(existsSync(join(setup.volumeRoot, container)), false, "volume destroyed on close");
  });
});
