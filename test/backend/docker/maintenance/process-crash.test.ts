import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { DockerCrashPoint } from "../../../../src/backend/docker/maintenance/index.ts";
import { instanceName, volumeDirName } from "../../../../src/backend/docker/names.ts";
import { dockerSkip, execIn } from "../../../support/docker.ts";
import { type Receiver, startReceiver } from "../../kit/receiver.ts";
import { signedClient } from "../../kit/signed-client.ts";
import {
  DISK_SKU,
  type DockerProcess,
  type DockerTestSetup,
  manifest,
  prepareDockerBackend,
  SECRET,
  spawnDockerBackend,
} from "../helpers.ts";
import { outboxDrained, provisionAndWait, provisionBody } from "../provision-helper.ts";
import { EXITS, held, VERIFY, VOLUME_APP } from "./harness.ts";

/**
 * The kill -9 matrix through the real `fred backend docker` process and its journal: one
 * lease goes through a restart, a good update and a bad update while the backend is
 * killed at every step of each (one crash point armed per process life; the process
 * started next resumes the pending command, and dies at the next step). At the end each
 * command has exactly one completion callback with its maintenance id, the lease is ready
 * on exactly one release, the engine holds exactly its one container, and the file the
 * workload wrote before the first restart is still in the volume.
 */
const skip = await dockerSkip({ btrfs: true, images: ["volume"] });

/** The crash point armed for each process life, in order; each kills the one before. */
const LIVES: (DockerCrashPoint | undefined)[] = [
  "docker.restart.begin",
  "docker.restart.after-stop",
  "docker.restart.after-start",
  "docker.update.begin", // resumes the restart to its end, then dies in the update
  "docker.update.after-stop",
  "docker.update.after-start",
  "docker.update.in-rollback", // the good update ends; the bad one dies in its rollback
  undefined,
];

describe("docker backend process: kill -9 at each step of restart and update", { skip }, () => {
  let setup: DockerTestSetup;
  let rx: Receiver;
  let proc: DockerProcess | undefined;
  const items = [{ sku: DISK_SKU, quantity: 1, service_name: "app" }];

  before(async () => {
    setup = prepareDockerBackend({ startup_verify_duration: VERIFY });
    rx = await startReceiver(SECRET);
  });
  after(async () => {
    await proc?.kill();
    await rx?.close();
    await setup?.cleanup();
  });

  it("every command completes exactly once and the lease ends on one release with its data", async () => {
    let life = 0;
    const spawn = async () => {
      const point = LIVES[life++];
      proc = await spawnDockerBackend(setup.configPath, 60_000, point ? { FRED_FAILPOINTS: point } : {});
      return signedClient(proc.ready.url, SECRET);
    };
    /** The armed point fires: the process dies by SIGKILL, and a new one takes over. */
    const diesThenRespawn = async () => {
      const exit = await (proc as DockerProcess).waitExit(120_000);
      assert.equal(exit.signal, "SIGKILL", (proc as DockerProcess).logTail());
      return spawn();
    };

    let c = await spawn();
    const call = provisionBody(rx, manifest({ app: { ...VOLUME_APP, env: { GEN: "1" } } }), items);
    const lease = call.lease;
    assert.equal((await provisionAndWait(c, rx, call)).status, "success");
    const container = instanceName(lease, "app", 0);
    const write = await execIn(container, "echo kept > /data/keep.txt && sync");
    assert.equal(write.code, 0, write.out);
    await outboxDrained(proc?.ready.url as string);

    const send = async (kind: "restart" | "update", gen?: string, bad = false) => {
      const id = randomUUID();
      const body: Record<string, unknown> = {
        lease_uuid: lease,
        maintenance_id: id,
        callback_url: call.body.callback_url,
        admitted_at: new Date().toISOString(),
      };
      if (kind === "update") {
        const service = { ...VOLUME_APP, env: { GEN: gen }, ...(bad ? EXITS : {}) };
        body.payload = Buffer.from(manifest({ app: service })).toString("base64");
      }
      // The crash point may fire before the 202 leaves: the command is journaled either way.
      const res = await c.post(`/${kind}`, body).catch(() => undefined);
      if (res) assert.equal(res.status, 202, res.text);
      return id;
    };
    const completions = (id: string) => rx.deliveries.filter((d) => d.body.maintenance_id === id);

    const restart = await send("restart");
    c = await diesThenRespawn(); // begin
    c = await diesThenRespawn(); // after-stop
    c = await diesThenRespawn(); // after-start
    await rx.waitFor((r) => r.deliveries.some((d) => d.body.maintenance_id === restart), 60_000);
    await outboxDrained(proc?.ready.url as string);

    const good = await send("update", "2");
    c = await diesThenRespawn(); // update begin
    c = await diesThenRespawn(); // update after-stop
    c = await diesThenRespawn(); // update after-start
    await rx.waitFor((r) => r.deliveries.some((d) => d.body.maintenance_id === good), 60_000);
    await outboxDrained(proc?.ready.url as string);

    const bad = await send("update", "3", true);
    c = await diesThenRespawn(); // in-rollback
    await rx.waitFor((r) => r.deliveries.some((d) => d.body.maintenance_id === bad), 60_000);
    await outboxDrained(proc?.ready.url as string);

    assert.deepEqual(
      [restart, good, bad].map((id) => completions(id).map((d) => d.body.status)),
      [["success"], ["success"], ["failed"]],
      "exactly one completion callback per command",
    );
    const status = (await c.get(`/provisions/${lease}`)).json as { status: string; release?: number };
    assert.equal(status.status, "ready", JSON.stringify(status));
    assert.deepEqual(
      (await held(lease)).map((h) => [h.name, h.release, h.state]),
      [[container, "2", "running"]],
      "one container of one release, no orphan",
    );
    const read = await execIn(container, "cat /data/keep.txt; echo $GEN");
    assert.equal(read.out, "kept\n2\n");
    const hostFile = join(setup.volumeRoot, container, volumeDirName("/data"), "keep.txt");
    assert.equal(readFileSync(hostFile, "utf8"), "kept\n");
  });
});
