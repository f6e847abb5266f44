import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningDockerBackend } from "../../../src/backend/docker/main.ts";
import { instanceName, leaseNetworkName } from "../../../src/backend/docker/names.ts";
import { dockerCli, dockerSkip } from "../../support/docker.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import {
  DISK_SKU,
  type DockerTestSetup,
  manifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  startInProcess,
} from "./helpers.ts";
import { outboxDrained, provisionAndWait, provisionBody } from "./provision-helper.ts";

/**
 * Provision lifecycle through the HTTP contract on the real engine: stacks with
 * dependencies and several instances, startup verification outcomes with curated
 * reasons, logs, deprovision, runtime death, and stale-handle safety.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd", "crashloop", "unhealthy", "volume"] });

const leaseContainers = async (lease: string) =>
  (await dockerCli(["ps", "-a", "--filter", `label=fred.lease_uuid=${lease}`, "--format", "{{.Names}}"])).out
    .split(/\s+/)
    .filter(Boolean)
    .sort();

/** Tenant-safe text: no host paths, no engine wording. */
function assertCurated(message: unknown): void {
  assert.equal(typeof message, "string");
  assert.doesNotMatch(message as string, /\/var\/|\/tmp\/|daemon|OCI|runc|sha256:|Error response/i);
}

describe("docker backend: provision lifecycle", { skip }, () => {
  let setup: DockerTestSetup;
  let backend: RunningDockerBackend;
  let rx: Receiver;
  let c: SignedClient;
  const one = (sku = SKU, service = "app") => [{ sku, quantity: 1, service_name: service }];

  before(async () => {
    setup = prepareDockerBackend({ startup_verify_duration: "1500ms", image_pull_timeout: "5s" });
    backend = await startInProcess(setup);
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
  });
  after(async () => {
    await backend?.close();
    await rx?.close();
    await setup?.cleanup();
  });

  it("runs a stack in depends_on order with several instances, serves it, and tears it all down", async () => {
    const tenant = `manifest1stack${randomUUID().slice(0, 8)}`;
    const call = provisionBody(
      rx,
      manifest({
        db: {
          image: "fred-test/volume:1",
          health_check: { test: ["CMD", "test", "-d", "/data"], interval: "300ms", retries: 3 },
        },
        web: {
          image: "fred-test/httpd:1",
          ports: { "8080/tcp": {} },
          env: { GREETING: "hello" },
          depends_on: { db: { condition: "service_healthy" } },
        },
      }),
      [
        { sku: DISK_SKU, quantity: 1, service_name: "db" },
        { sku: SKU, quantity: 2, service_name: "web" },
      ],
      { tenant },
    );
    const result = await provisionAndWait(c, rx, call);
    assert.equal(result.status, "success", JSON.stringify(result));
    assert.deepEqual(await leaseContainers(call.lease), [
      instanceName(call.lease, "db", 0),
      instanceName(call.lease, "web", 0),
      instanceName(call.lease, "web", 1),
    ]);
    const env = await dockerCli(["exec", instanceName(call.lease, "web", 1), "sh", "-c", "echo $GREETING"]);
    assert.equal(env.out.trim(), "hello");

    const info = await c.get(`/info/${call.lease}`);
    assert.equal(info.status, 200, info.text);
    const body = info.json as {
      host: string;
      services: Record<string, { instances: { ports: Record<string, { host_port: string }> }[] }>;
    };
    assert.equal(body.host, "127.0.0.1");
    assert.equal(body.services.web?.instances.length, 2);
    for (const inst of body.services.web?.instances ?? []) {
      const port = inst.ports["8080/tcp"]?.host_port;
      assert.equal((await (await fetch(`http://127.0.0.1:${port}/`)).text()).trim(), "fred-test-httpd");
    }

    const logs = await c.get(`/logs/${call.lease}?tail=5`);
    assert.equal(logs.status, 200);
    assert.deepEqual(Object.keys(logs.json as object).sort(), ["db/0", "web/0", "web/1"]);
    assert.match((logs.json as Record<string, string>)["db/0"] ?? "", /volume ready/);

    const volume = join(setup.volumeRoot, instanceName(call.lease, "db", 0));
    assert.ok(existsSync(volume), "db instance has its durable subvolume");
    assert.equal((await c.post("/deprovision", { lease_uuid: call.lease })).status, 200);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${call.lease}:deprovisioned`), 60_000);
    assert.deepEqual(await leaseContainers(call.lease), []);
    assert.equal(existsSync(volume), false, "volume destroyed on deprovision");
    const net = await dockerCli(["network", "inspect", leaseNetworkName(call.lease)]);
    assert.notEqual(net.code, 0, "the lease's network goes with the lease");
  });

  const failures: [string, Record<string, unknown>, string, RegExp][] = [
    [
      "a container that exits during verification",
      { image: "fred-test/crashloop:1" },
      "ContainerExited",
      /exited unexpectedly with code 3/,
    ],
    [
      "a health check that never passes",
      {
        image: "fred-test/unhealthy:1",
        health_check: { test: ["CMD", "test", "-f", "/tmp/ready"], interval: "200ms", retries: 2 },
      },
      "HealthCheckFailed",
      /health check/,
    ],
    [
      "an image that cannot be pulled",
      { image: "fred-test/absent:1" },
      "ImagePullFailed",
      /could not be pulled/,
    ],
    [
      "an entrypoint missing from the image",
      { image: "fred-test/httpd:1", command: ["/nonexistent"] },
      "ContainerStartFailed",
      /could not be started/,
    ],
  ];
  for (const [name, service, reason, message] of failures) {
    it(`fails ${name} with reason ${reason} and a curated message`, async () => {
      const call = provisionBody(rx, manifest({ app: service }), one());
      const result = await provisionAndWait(c, rx, call);
      assert.equal(result.status, "failed");
      assertCurated(result.error);
      assert.match(String(result.error), message);
      const prov = await c.get(`/provisions/${call.lease}`);
      const p = prov.json as { status: string; reason: string; message: string };
      assert.equal(p.status, "failed");
      assert.equal(p.reason, reason);
      assertCurated(p.message);
      const rel = (await c.get(`/releases/${call.lease}`)).json as { status: string; reason?: string }[];
      assert.equal(rel[0]?.status, "failed");
      const running = (
        await dockerCli(["ps", "-q", "--filter", `label=fred.lease_uuid=${call.lease}`])
      ).out.trim();
      assert.equal(running, "", "nothing of a failed lease keeps running");
    });
  }

  it("keeps the logs of a failed lease", async () => {
    const call = provisionBody(rx, manifest({ app: { image: "fred-test/crashloop:1" } }), one());
    await provisionAndWait(c, rx, call);
    const logs = await c.get(`/logs/${call.lease}?tail=1`);
    assert.equal(logs.status, 200);
    assert.equal((logs.json as Record<string, string>)["app/0"], "crashloop giving up\n");
  });

  it("a container killed from outside → a failed lifecycle callback and status", async () => {
    const call = provisionBody(rx, manifest({ app: { image: "fred-test/httpd:1" } }), one());
    assert.equal((await provisionAndWait(c, rx, call)).status, "success");
    await outboxDrained(backend.url);
    const kill = await dockerCli(["kill", instanceName(call.lease, "app", 0)]);
    assert.equal(kill.code, 0, kill.out);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${call.lease}:failed`), 30_000);
    const d = rx.deliveries.find(
      (x) => x.route === "lifecycle" && x.body.lease_uuid === call.lease && x.body.status === "failed",
    );
    assert.equal(d?.callbackId, call.op);
    assertCurated(d?.body.error);
    const p = (await c.get(`/provisions/${call.lease}`)).json as {
      status: string;
      reason: string;
      terminal_budget: unknown;
    };
    assert.equal(p.status, "failed");
    assert.equal(p.reason, "ContainerExited");
    // Seen dying on the live event stream: one failure of the workload, counted.
    assert.deepEqual(p.terminal_budget, { verdict: "retry", consecutive_failures: 1 });
  });

  it("stale handles: a same-lease container of another deployment is never touched", async () => {
    const call = provisionBody(rx, manifest({ app: { image: "fred-test/httpd:1" } }), one());
    const foreignName = `foreign-${call.lease}`;
    const foreign = await dockerCli([
      "create",
      "--name",
      foreignName,
      "--label",
      "fred.managed=true",
      "--label",
      `fred.lease_uuid=${call.lease}`,
      "--label",
      `fred.storage_id=${randomUUID()}`,
      "fred-test/httpd:1",
    ]);
    assert.equal(foreign.code, 0, foreign.out);
    try {
      assert.equal((await provisionAndWait(c, rx, call)).status, "success");
      const before = backend.substrate.staleHandles;
      assert.equal((await c.post("/deprovision", { lease_uuid: call.lease })).status, 200);
      await rx.waitFor((r) => r.effects.includes(`lifecycle:${call.lease}:deprovisioned`), 60_000);
      assert.deepEqual(
        await leaseContainers(call.lease),
        [foreignName],
        "ours removed, the foreign one left",
      );
      assert.ok(backend.substrate.staleHandles > before, "the foreign container was reported");
    } finally {
      await dockerCli(["rm", "-f", foreignName]);
    }
  });

  it("stale handles: a foreign container holding our name fails the provision and survives", async () => {
    const call = provisionBody(rx, manifest({ app: { image: "fred-test/httpd:1" } }), one());
    const name = instanceName(call.lease, "app", 0);
    const foreign = await dockerCli([
      "create",
      "--name",
      name,
      "--label",
      `fred.lease_uuid=${call.lease}`,
      "fred-test/httpd:1",
    ]);
    assert.equal(foreign.code, 0, foreign.out);
    try {
      const result = await provisionAndWait(c, rx, call);
      assert.equal(result.status, "failed");
      assertCurated(result.error);
      assert.equal((await dockerCli(["inspect", name])).code, 0, "the foreign container is still there");
    } finally {
      await dockerCli(["rm", "-f", name]);
    }
  });
});
