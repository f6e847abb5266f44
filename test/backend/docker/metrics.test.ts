import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { instanceName } from "../../../src/backend/docker/names.ts";
import { dockerCli, dockerSkip, execIn } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import { sample, scrape } from "../../support/metrics.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import {
  DISK_SKU,
  type DockerProcess,
  type DockerTestSetup,
  manifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  spawnDockerBackend,
} from "./helpers.ts";
import { provisionAndWait, provisionBody } from "./provision-helper.ts";

/**
 * The Docker backend's metric families (issue 35 item 2) through one real `fred backend
 * docker` process on the real engine and btrfs (run under the shared Docker lock): each
 * test does what moves a family, then scrapes /metrics (promtool-checked) and finds it
 * moved. Retained data expires after 3 s and the sweeps run every second; the orphan
 * pass runs every second.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd", "crashloop", "volume"] });

describe("docker backend metric families", { skip }, () => {
  let setup: DockerTestSetup;
  let proc: DockerProcess;
  let rx: Receiver;
  let c: SignedClient;
  const metrics = () => scrape(`${proc.ready.url}/metrics`);
  const scrapeUntil = async (ok: (text: string) => boolean, what: string): Promise<string> => {
    let last = "";
    await until(
      async () => {
        last = await metrics();
        return ok(last);
      },
      what,
      { timeoutMs: 60_000, intervalMs: 250, context: () => proc.logTail() },
    );
    return last;
  };

  before(async () => {
    setup = prepareDockerBackend({
      image_pull_timeout: "5s",
      retain_on_close: true,
      retention_max_age: "3s",
      retention_reap_interval: "1s",
      reconcile_interval: "1s",
      usage_sample_interval: "5s",
    });
    proc = await spawnDockerBackend(setup.configPath);
    rx = await startReceiver(SECRET);
    c = signedClient(proc.ready.url, SECRET);
  });
  after(async () => {
    await proc?.stop();
    await rx?.close();
    await setup?.cleanup();
  });

  it("a provision: container starts, the time of each stage, the data file system's fill", async () => {
    const call = provisionBody(rx, manifest({ web: { image: "fred-test/httpd:1" } }), [
      { sku: SKU, quantity: 1, service_name: "web" },
    ]);
    assert.equal((await provisionAndWait(c, rx, call)).status, "success");
    const text = await metrics();
    assert.ok(sample(text, "fred_docker_container_starts_total", { outcome: "success" })! >= 1);
    for (const stage of ["pull", "create", "start", "healthy"])
      assert.ok(sample(text, "fred_docker_provision_stage_seconds_count", { stage })! >= 1, stage);
    const used = sample(text, "fred_backend_disk_used_bytes")!;
    const capacity = sample(text, "fred_backend_disk_capacity_bytes")!;
    assert.ok(used > 0 && capacity > used, `${used} of ${capacity}`);
  });

  it("a pull that cannot reach its registry counts as failed", async () => {
    const call = provisionBody(rx, manifest({ web: { image: "docker.io/library/fred-no-such-image:1" } }), [
      { sku: SKU, quantity: 1, service_name: "web" },
    ]);
    assert.equal((await provisionAndWait(c, rx, call)).status, "failed");
    const text = await metrics();
    assert.equal(sample(text, "fred_docker_image_pulls_total", { outcome: "failed" }), 1);
    assert.equal(sample(text, "fred_docker_image_pull_failures_total"), 1);
  });

  it("a workload that exits on its own is counted by reason", async () => {
    const call = provisionBody(rx, manifest({ app: { image: "fred-test/crashloop:1" } }), [
      { sku: SKU, quantity: 1, service_name: "app" },
    ]);
    assert.equal((await provisionAndWait(c, rx, call)).status, "success");
    // crashloop exits with code 3 half a second after it started.
    await scrapeUntil(
      (t) => sample(t, "fred_docker_container_exits_total", { reason: "error" }) === 1,
      "the exit counted as an error",
    );
  });

  it("volume usage and quotas, then the retained copy expires: sweeps and bytes freed", async () => {
    const call = provisionBody(rx, manifest({ db: { image: "fred-test/volume:1" } }), [
      { sku: DISK_SKU, quantity: 1, service_name: "db" },
    ]);
    assert.equal((await provisionAndWait(c, rx, call)).status, "success");
    const wrote = await execIn(
      instanceName(call.lease, "db", 0),
      "dd if=/dev/urandom of=/data/blob bs=1M count=2 && sync",
    );
    assert.equal(wrote.code, 0, wrote.out);
    await scrapeUntil(
      (t) =>
        sample(t, "fred_docker_volume_quota_bytes") === 16 * 1024 * 1024 &&
        sample(t, "fred_docker_volume_used_bytes")! >= 2 * 1024 * 1024,
      "the volume's 16 MiB quota and 2 MiB used, from a usage pass",
    );
    assert.ok(sample(await metrics(), "fred_backend_retention_sweeps_total", { outcome: "success" })! >= 1);
    assert.equal((await c.post("/deprovision", { lease_uuid: call.lease })).status, 200);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${call.lease}:deprovisioned`), 60_000);
    await scrapeUntil(
      (t) => sample(t, "fred_backend_retention_freed_bytes_total")! >= 2 * 1024 * 1024,
      "the expired copy's bytes freed",
    );
  });

  it("an orphan's data is not destroyed without a close on record", async () => {
    const lease = randomUUID();
    const run = await dockerCli([
      "run",
      "-d",
      "--label",
      "fred.managed=true",
      "--label",
      `fred.storage_id=${setup.storageId}`,
      "--label",
      `fred.lease_uuid=${lease}`,
      "--label",
      "fred.service_name=app",
      "--label",
      "fred.instance_index=0",
      "fred-test/volume:1",
    ]);
    assert.equal(run.code, 0, run.out);
    await scrapeUntil(
      (t) => sample(t, "fred_backend_destroys_refused_total", { reason: "no_tombstone" }) === 1,
      "the orphan's destroy refused",
    );
  });
});
