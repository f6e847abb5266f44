import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { loadDockerBackendConfig } from "../../../../src/backend/docker/config.ts";
import { type RunningDockerBackend, startDockerBackend } from "../../../../src/backend/docker/main.ts";
import { type Clock, systemClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";
import { dockerCli, dockerSkip } from "../../../support/docker.ts";
import { type Receiver, startReceiver } from "../../kit/receiver.ts";
import { type SignedClient, signedClient } from "../../kit/signed-client.ts";
import { type DockerTestSetup, manifest, prepareDockerBackend, SECRET, SKU } from "../helpers.ts";
import { provisionAndWait, provisionBody } from "../provision-helper.ts";

/**
 * Image collection on the real engine. Every image here is made by this file (a commit of
 * fred-test/httpd:1 under a unique name, so each has its own ID) and removed by it at the
 * end if the backend left it: the shared fixture images are never handed to a backend
 * under test. Sweeps are run by the test (image_gc_interval is an hour); the passing of
 * image_gc_after is the backend's clock moved forward while nothing is in flight.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd"] });
const HOUR = 3_600_000;

/** The system clock plus an offset the test moves forward. */
function movableClock(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    setTimer: (ms, fn) => systemClock.setTimer(ms, fn),
    sleep: (ms, signal) => systemClock.sleep(ms, signal),
    advance: (ms) => {
      offset += ms;
    },
  };
}

const made: string[] = [];

/** A new image of our own: fred-test/httpd:1 committed under a unique name, with a label of its own. */
async function makeImage(what: string): Promise<{ ref: string; id: string }> {
  const ref = `fred-test/gc-${what}-${randomUUID().slice(0, 8)}:1`;
  const created = await dockerCli(["create", "fred-test/httpd:1"]);
  assert.equal(created.code, 0, created.out);
  const container = created.out.trim();
  const commit = await dockerCli(["commit", "--change", `LABEL fred.test.image-gc=${ref}`, container, ref]);
  await dockerCli(["rm", container]);
  assert.equal(commit.code, 0, commit.out);
  made.push(ref);
  return { ref, id: await imageId(ref) };
}

async function imageId(ref: string): Promise<string> {
  const r = await dockerCli(["image", "inspect", "--format", "{{.Id}}", ref]);
  assert.equal(r.code, 0, r.out);
  return r.out.trim();
}

async function present(id: string): Promise<boolean> {
  return (await dockerCli(["image", "inspect", id])).code === 0;
}

async function metric(backend: RunningDockerBackend, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${backend.url}/metrics`)).text();
  const m = pattern.exec(text);
  return m === null ? 0 : Number(m[1]);
}

interface Harness {
  setup: DockerTestSetup;
  backend: RunningDockerBackend;
  clock: ReturnType<typeof movableClock>;
  c: SignedClient;
  sweep(): Promise<void>;
  /** Provisions a lease running `ref`; its UUID, and the operation whose lifecycle URL it keeps. */
  deploy(ref: string): Promise<string>;
  lifecycleUrl(lease: string): string;
  close(lease: string): Promise<void>;
}

async function harness(rx: Receiver, overrides: Record<string, unknown>): Promise<Harness> {
  const setup = prepareDockerBackend({ image_gc_interval: "1h", ...overrides });
  const clock = movableClock();
  const backend = await startDockerBackend(loadDockerBackendConfig(setup.configPath, {}), {
    logger: createLogger("image-gc-test", process.env.TEST_LOG_LEVEL ?? "silent"),
    clock,
  });
  const c = signedClient(backend.url, SECRET);
  const collector = backend.imageCollector;
  const operations = new Map<string, string>();
  assert.ok(collector, "image collection is on");
  return {
    setup,
    backend,
    clock,
    c,
    sweep: () => collector.sweep(),
    async deploy(ref) {
      const call = provisionBody(rx, manifest({ app: { image: ref, ports: { "8080/tcp": {} } } }), [
        { sku: SKU, quantity: 1, service_name: "app" },
      ]);
      const result = await provisionAndWait(c, rx, call);
      assert.equal(result.status, "success", JSON.stringify(result));
      operations.set(call.lease, call.op);
      return call.lease;
    },
    lifecycleUrl: (lease) => `${rx.url}/callbacks/provision?lifecycle_id=${operations.get(lease)}`,
    async close(lease) {
      assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
      await rx.waitFor((r) => r.effects.includes(`lifecycle:${lease}:deprovisioned`), 60_000);
    },
  };
}

describe("docker backend: image collection", { skip }, () => {
  let rx: Receiver;
  const harnesses: Harness[] = [];

  before(async () => {
    rx = await startReceiver(SECRET);
  });
  after(async () => {
    for (const h of harnesses) {
      await h.backend.close();
      await h.setup.cleanup();
    }
    await rx?.close();
    for (const ref of made) await dockerCli(["rmi", ref]);
  });

  it("removes an image no release uses once image_gc_after has passed, and never a running lease's or a foreign one", async () => {
    // No disk pressure here: only the delay decides.
    const h = await harness(rx, { image_gc_after: "1h", image_gc_high_water_percent: 100 });
    harnesses.push(h);
    const unused = await makeImage("unused");
    const running = await makeImage("running");
    const foreign = await makeImage("foreign");

    const closed = await h.deploy(unused.ref);
    await h.deploy(running.ref);
    await h.sweep();
    assert.ok(await present(unused.id), "kept while its lease runs");

    await h.close(closed);
    await h.sweep();
    assert.ok(await present(unused.id), "kept until image_gc_after has passed since its last use");
    assert.equal(await metric(h.backend, /^fred_image_gc_candidates (\d+)$/m), 1);

    h.clock.advance(2 * HOUR);
    await h.sweep();
    assert.equal(await present(unused.id), false, "removed once unused for image_gc_after");
    assert.ok(await present(running.id), "a running lease's image stays, however long ago it was pulled");
    assert.ok(await present(foreign.id), "an image the backend never used is never touched");
    assert.equal(await metric(h.backend, /^fred_images_collected_total\{cause="unused"\} (\d+)$/m), 1);
    assert.ok((await metric(h.backend, /^fred_image_bytes_freed_total (\d+)$/m)) > 0, "bytes freed counted");
    assert.equal(await metric(h.backend, /^fred_image_gc_candidates (\d+)$/m), 0);
  });

  it("removes nothing while what is in use cannot be established (a stored manifest that does not parse)", async () => {
    const h = await harness(rx, { image_gc_after: "1h", image_gc_high_water_percent: 100 });
    harnesses.push(h);
    const unused = await makeImage("undecided");
    const running = await makeImage("running");
    await h.close(await h.deploy(unused.ref));
    const lease = await h.deploy(running.ref);
    const db = h.backend.journal.db;
    const original = (
      db.prepare("SELECT payload FROM leases WHERE lease_uuid = ?").get(lease) as { payload: Buffer }
    ).payload;
    const setPayload = db.prepare("UPDATE leases SET payload = ? WHERE lease_uuid = ?");
    setPayload.run(Buffer.from("not a manifest"), lease);
    h.clock.advance(2 * HOUR);
    await h.sweep();
    assert.ok(await present(unused.id), "kept: the sweep could not tell which images the lease needs");
    setPayload.run(original, lease);
    await h.sweep();
    assert.equal(await present(unused.id), false, "removed once the journal reads again");
    assert.ok(await present(running.id));
  });

  it("above the disk high-water mark collects early, but never a retained, running or foreign image", async () => {
    // A high-water mark of 0: any disk use is above it, so every image no lease needs goes at once.
    const h = await harness(rx, {
      retain_on_close: true,
      image_gc_after: "24h",
      image_gc_high_water_percent: 0,
      image_gc_low_water_percent: 0,
    });
    harnesses.push(h);
    const retained = await makeImage("retained");
    const running = await makeImage("running");
    const foreign = await makeImage("foreign");
    const replaced = await makeImage("replaced");

    const kept = await h.deploy(retained.ref);
    await h.close(kept);
    const info = (await h.c.get(`/provisions/${kept}`)).json as { status?: string };
    assert.equal(info.status, "retained", "the close kept the lease's data");
    await h.deploy(running.ref);
    // An update leaves the first image to a superseded release only: not needed, so it goes.
    const lease = await h.deploy(replaced.ref);
    const id = randomUUID();
    const update = await h.c.post("/update", {
      lease_uuid: lease,
      maintenance_id: id,
      callback_url: h.lifecycleUrl(lease),
      payload: Buffer.from(manifest({ app: { image: running.ref, ports: { "8080/tcp": {} } } })).toString(
        "base64",
      ),
    });
    assert.equal(update.status, 202, update.text);
    await rx.waitFor((r) => r.deliveries.some((d) => d.body.maintenance_id === id), 60_000);
    const done = rx.deliveries.find((d) => d.body.maintenance_id === id);
    assert.equal(done?.body.status, "success", JSON.stringify(done?.body));

    await h.sweep();
    assert.equal(await present(replaced.id), false, "an image only history references goes under pressure");
    assert.ok(await present(retained.id), "a retained lease's image stays under pressure");
    assert.ok(await present(running.id), "a running lease's image stays under pressure");
    assert.ok(await present(foreign.id), "an image the backend never used is never touched");
    assert.equal(await metric(h.backend, /^fred_images_collected_total\{cause="disk_pressure"\} (\d+)$/m), 1);
  });
});
