import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { RunningDockerBackend } from "../../../src/backend/docker/main.ts";
import { instanceName } from "../../../src/backend/docker/names.ts";
import type { LogStreamEvent } from "../../../src/core/backend-contract/index.ts";
import { BackendClient } from "../../../src/provider/backend-client/client.ts";
import { backendConfigFor } from "../../provider/backend-client/backend-config.ts";
import { dockerCli, dockerSkip } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import {
  type DockerTestSetup,
  manifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  startInProcess,
} from "./helpers.ts";
import { provisionAndWait, provisionBody } from "./provision-helper.ts";

/**
 * The Docker backend's streaming log read on the real engine, through the contract route
 * (`GET /logs/{uuid}?follow=true`) and the client providerd uses for it. The workload is a
 * busybox shell that prints a boot line naming its container, then idles; a test makes it
 * write more by `docker exec` into its own stdout/stderr (/proc/1/fd/1, /proc/1/fd/2), so a
 * line is provably written after the stream was opened. The stream starts with the tail,
 * carries new lines with the pinned shape, keeps going across the backend's restart of the
 * lease (an instance event, then the new container's lines), and ends when the lease does.
 */
const skip = await dockerSkip({ btrfs: true, images: ["unhealthy"] });

/** SIGTERM ends it at once (a shell as PID 1 would otherwise wait out the stop grace). */
const WORKLOAD = 'trap "exit 0" TERM; echo "boot $HOSTNAME"; while true; do sleep 0.2; done';

/** A stream read into an array as it arrives, so a test waits for "an event such that". */
class Followed {
  readonly events: LogStreamEvent[] = [];
  readonly done: Promise<void>;
  error: unknown;

  constructor(stream: AsyncGenerator<LogStreamEvent>) {
    this.done = (async () => {
      try {
        for await (const event of stream)
          if (!("type" in event && event.type === "keepalive")) this.events.push(event);
      } catch (err) {
        this.error = err;
      }
    })();
  }

  /** The index of the first event at or after `from` that matches. */
  async index(match: (e: LogStreamEvent) => boolean, what: string, from = 0): Promise<number> {
    return until(
      () => {
        const at = this.events.findIndex((e, i) => i >= from && match(e));
        return at >= 0 ? at + 1 : undefined;
      },
      what,
      { timeoutMs: 60_000, context: () => JSON.stringify(this.events.slice(-20)) },
    ).then((n) => n - 1);
  }
}

const isLine = (text: string) => (e: LogStreamEvent) => "line" in e && e.line === text;

describe("docker backend: logs?follow=true on the real engine", { skip }, () => {
  let setup: DockerTestSetup;
  let backend: RunningDockerBackend;
  let rx: Receiver;
  let c: SignedClient;
  let client: BackendClient;
  const stops: AbortController[] = [];
  const lifecycles = new Map<string, string>();

  before(async () => {
    setup = prepareDockerBackend({ container_stop_timeout: "2s" });
    backend = await startInProcess(setup);
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
    client = await BackendClient.create({
      backend: backendConfigFor(backend.url, SECRET, { name: "docker-test", skus: [SKU] }),
      secret: SECRET,
      storageId: setup.storageId,
    });
  });
  after(async () => {
    for (const stop of stops) stop.abort();
    await client?.close();
    await backend?.close();
    await rx?.close();
    await setup?.cleanup();
  });

  /** A running lease (its provision operation id, which names its lifecycle, kept for maintenance calls). */
  async function provisioned(): Promise<string> {
    const payload = manifest({
      app: { image: "fred-test/unhealthy:1", command: ["/bin/sh", "-c", WORKLOAD] },
    });
    const call = provisionBody(rx, payload, [{ sku: SKU, quantity: 1, service_name: "app" }]);
    assert.equal((await provisionAndWait(c, rx, call)).status, "success");
    lifecycles.set(call.lease, call.op);
    return call.lease;
  }

  /** The workload's container writes `text` on its stdout (1) or stderr (2) now. */
  async function write(lease: string, text: string, fd: 1 | 2 = 1): Promise<void> {
    const out = await dockerCli([
      "exec",
      instanceName(lease, "app", 0),
      "sh",
      "-c",
      `echo '${text}' > /proc/1/fd/${fd}`,
    ]);
    assert.equal(out.code, 0, out.out);
  }

  async function follow(lease: string, tail: number): Promise<Followed> {
    const stop = new AbortController();
    stops.push(stop);
    const stream = await client.followLogs(lease, tail, stop.signal);
    assert.ok(stream, "the backend streams the lease's logs");
    return new Followed(stream);
  }

  it("starts with the tail, then a line written after subscribing, in the pinned shape", async () => {
    const lease = await provisioned();
    await write(lease, "written before");
    await until(async () => {
      const res = await c.get(`/logs/${lease}?tail=5`);
      return String((res.json as Record<string, string>)["app/0"] ?? "").includes("written before");
    }, "the engine holds the line written before subscribing");

    const f = await follow(lease, 2);
    await until(() => f.events.length >= 2, "the two tail lines");
    const [boot, before] = f.events;
    assert.match(String(boot && "line" in boot && boot.line), /^boot [0-9a-f]{12}$/);
    assert.deepEqual(
      before && "line" in before && [before.service, before.instance, before.stream, before.line],
      ["app", 0, "stdout", "written before"],
    );

    const marker = `after subscribing ${randomUUID()}`;
    await write(lease, marker, 2);
    const at = await f.index(isLine(marker), "the line written after subscribing", 2);
    const live = f.events[at] as unknown as Record<string, unknown>;
    assert.deepEqual(Object.keys(live).sort(), ["instance", "line", "service", "stream", "ts"]);
    assert.deepEqual([live.service, live.instance, live.stream], ["app", 0, "stderr"]);
    // The engine's own RFC 3339 timestamp, to the nanosecond, in UTC.
    assert.match(String(live.ts), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/);
    assert.ok(Math.abs(Date.parse(String(live.ts)) - Date.now()) < 60_000, String(live.ts));
    assert.equal(f.error, undefined);
  });

  it("keeps streaming across the backend's restart of the lease: an instance event, then the new container's lines", async () => {
    const lease = await provisioned();
    const f = await follow(lease, 1);
    const firstBoot = await f.index((e) => "line" in e && e.line.startsWith("boot "), "the tail line");
    const oldBoot = (f.events[firstBoot] as { line: string }).line;

    const id = randomUUID();
    const url = `${rx.url}/callbacks/provision?lifecycle_id=${lifecycles.get(lease)}`;
    const res = await c.post("/restart", { lease_uuid: lease, maintenance_id: id, callback_url: url });
    assert.equal(res.status, 202, res.text);
    await rx.waitFor((r) => r.deliveries.some((d) => d.body.maintenance_id === id), 120_000);
    assert.equal(rx.deliveries.find((d) => d.body.maintenance_id === id)?.body.status, "success");

    const changed = await f.index(
      (e) => "type" in e && e.type === "instance",
      "the instance event",
      firstBoot + 1,
    );
    assert.deepEqual(
      { ...f.events[changed], ts: "" },
      {
        type: "instance",
        service: "app",
        instance: 0,
        event: "restarted",
        ts: "",
      },
    );
    // The new container's boot line (another container id) comes after the instance event.
    const newBoot = await f.index(
      (e) => "line" in e && e.line.startsWith("boot ") && e.line !== oldBoot,
      "the new container's boot line",
      changed + 1,
    );
    const marker = `after the restart ${randomUUID()}`;
    await write(lease, marker);
    await f.index(isLine(marker), "a line the new container writes", newBoot + 1);
    // Each line once: the old container's boot line is not read again, the new one's once.
    const lines = f.events.filter((e) => "line" in e).map((e) => (e as { line: string }).line);
    assert.equal(lines.filter((l) => l === oldBoot).length, 1, JSON.stringify(lines));
    assert.equal(lines.filter((l) => l.startsWith("boot ")).length, 2, JSON.stringify(lines));
    assert.equal(f.error, undefined);
  });

  it("ends with an end event once the lease is deprovisioned", async () => {
    const lease = await provisioned();
    const f = await follow(lease, 1);
    await until(() => f.events.length >= 1, "the tail line");
    assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
    await f.index((e) => "type" in e && e.type === "end", "the end event");
    await f.done;
    assert.equal(f.error, undefined);
    assert.deepEqual(f.events.at(-1), { type: "end", reason: "lease_ended" });
  });
});
