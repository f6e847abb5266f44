import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RunningDockerBackend } from "../../../src/backend/docker/main.ts";
import { instanceName } from "../../../src/backend/docker/names.ts";
import { dockerCli, dockerSkip } from "../../support/docker.ts";
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
import { outboxDrained, provisionAndWait, provisionBody } from "./provision-helper.ts";

/**
 * Persisted failure diagnostics on the real engine: the logs of a lease's failed
 * containers are captured before the containers are removed, so after the close (no
 * container left) GET /logs and GET /provisions still answer with them.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd", "crashloop"] });

const leaseContainers = async (lease: string) =>
  (await dockerCli(["ps", "-aq", "--filter", `label=fred.lease_uuid=${lease}`])).out
    .split(/\s+/)
    .filter(Boolean);

describe("docker backend: failure diagnostics outlive the containers", { skip }, () => {
  let setup: DockerTestSetup;
  let backend: RunningDockerBackend;
  let rx: Receiver;
  let c: SignedClient;
  const one = [{ sku: SKU, quantity: 1, service_name: "app" }];

  before(async () => {
    setup = prepareDockerBackend({ startup_verify_duration: "1500ms", diagnostics_max_age: "1h" });
    backend = await startInProcess(setup);
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
  });
  after(async () => {
    await backend?.close();
    await rx?.close();
    await setup?.cleanup();
  });

  const close = async (lease: string) => {
    assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${lease}:deprovisioned`), 60_000);
    assert.deepEqual(await leaseContainers(lease), [], "the close removed every container");
  };

  it("serves a crashlooping container's logs and failure after its containers are removed", async () => {
    const call = provisionBody(rx, manifest({ app: { image: "fred-test/crashloop:1" } }), one);
    const result = await provisionAndWait(c, rx, call);
    assert.equal(result.status, "failed");
    await close(call.lease);

    const logs = await c.get(`/logs/${call.lease}`);
    assert.equal(logs.status, 200, logs.text);
    const text = (logs.json as Record<string, string>)["app/0"] ?? "";
    assert.match(text, /crashloop giving up\n$/);
    assert.deepEqual((await c.get(`/logs/${call.lease}?tail=1`)).json, { "app/0": "crashloop giving up\n" });

    const p = await c.get(`/provisions/${call.lease}`);
    assert.equal(p.status, 200, p.text);
    const body = p.json as Record<string, unknown>;
    assert.equal(body.status, "failed");
    assert.equal(body.reason, "ContainerExited");
    assert.match(String(body.message), /exited unexpectedly with code 3/);
    assert.equal(body.message, result.error, "the curated message is the callback's error");
    assert.doesNotMatch(p.text, /\/var\/|daemon|OCI|runc|sha256:|Error response/i);
  });

  it("captures a runtime death's logs just before the close removes the containers", async () => {
    const call = provisionBody(rx, manifest({ app: { image: "fred-test/httpd:1" } }), one);
    assert.equal((await provisionAndWait(c, rx, call)).status, "success");
    await outboxDrained(backend.url);
    const kill = await dockerCli(["kill", instanceName(call.lease, "app", 0)]);
    assert.equal(kill.code, 0, kill.out);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${call.lease}:failed`), 30_000);
    assert.equal(backend.journal.diagnostics.get(call.lease)?.logs, undefined, "not captured yet");
    await close(call.lease);

    const logs = await c.get(`/logs/${call.lease}`);
    assert.equal(logs.status, 200, logs.text);
    assert.deepEqual(Object.keys(logs.json as object), ["app/0"]);
    const p = (await c.get(`/provisions/${call.lease}`)).json as Record<string, unknown>;
    assert.equal(p.status, "failed");
    assert.equal(p.reason, "ContainerExited");
    assert.equal(p.fail_count, 1);
  });
});
