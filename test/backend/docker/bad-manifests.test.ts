import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { RunningDockerBackend } from "../../../src/backend/docker/main.ts";
import { dockerCli, dockerSkip } from "../../support/docker.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import { type DockerTestSetup, prepareDockerBackend, SECRET, SKU, startInProcess } from "./helpers.ts";
import { provisionBody } from "./provision-helper.ts";

/**
 * Every manifest rule the Docker backend enforces, through its HTTP contract: each bad
 * manifest is a 400 with a `validation_code`, and nothing exists afterwards (no record,
 * no container, no network).
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd"] });

const svc = (extra: Record<string, unknown>) => ({
  services: { app: { image: "fred-test/httpd:1", ...extra } },
});
const json = (doc: unknown) => JSON.stringify(doc);

const INVALID: [string, string][] = [
  ["not JSON", "{nope"],
  ["trailing garbage", `${json(svc({}))} x`],
  ["a JSON array", "[]"],
  ["empty services", json({ services: {} })],
  ["an extra top-level key next to services", json({ ...svc({}), volumes: {} })],
  ["the unknown field volumes", json(svc({ volumes: ["/data"] }))],
  ["no image", json({ services: { app: { env: {} } } })],
  ["an empty image", json({ services: { app: { image: "" } } })],
  ["a port without protocol", json(svc({ ports: { "80": {} } }))],
  ["port 0", json(svc({ ports: { "0/tcp": {} } }))],
  ["protocol sctp", json(svc({ ports: { "80/sctp": {} } }))],
  ["a fixed host_port", json(svc({ ports: { "80/tcp": { host_port: 8080 } } }))],
  ["two ingress ports", json(svc({ ports: { "80/tcp": { ingress: true }, "81/tcp": { ingress: true } } }))],
  ["an ingress UDP port", json(svc({ ports: { "53/udp": { ingress: true } } }))],
  ["env PATH", json(svc({ env: { PATH: "/evil" } }))],
  ["env LD_PRELOAD", json(svc({ env: { LD_PRELOAD: "/x.so" } }))],
  ["env fred_token (any case)", json(svc({ env: { fred_token: "x" } }))],
  ["env DOCKER_HOST", json(svc({ env: { DOCKER_HOST: "tcp://x" } }))],
  ["an env name with =", json(svc({ env: { "A=B": "x" } }))],
  ["label fred.*", json(svc({ labels: { "fred.lease_uuid": "x" } }))],
  ["label Traefik.*", json(svc({ labels: { "Traefik.enable": "true" } }))],
  ["an empty health test", json(svc({ health_check: { test: [] } }))],
  ["an unknown health test form", json(svc({ health_check: { test: ["SHELL", "true"] } }))],
  ["NONE with more elements", json(svc({ health_check: { test: ["NONE", "x"] } }))],
  ["negative retries", json(svc({ health_check: { test: ["CMD", "true"], retries: -1 } }))],
  ["a bad health interval", json(svc({ health_check: { test: ["CMD", "true"], interval: "5 seconds" } }))],
  ["a relative tmpfs", json(svc({ tmpfs: ["cache"] }))],
  ["tmpfs on /", json(svc({ tmpfs: ["/"] }))],
  ["tmpfs on /tmp", json(svc({ tmpfs: ["/tmp/"] }))],
  ["tmpfs under /proc", json(svc({ tmpfs: ["/proc/x"] }))],
  ["duplicate tmpfs", json(svc({ tmpfs: ["/a", "/a/"] }))],
  ["five tmpfs", json(svc({ tmpfs: ["/a", "/b", "/c", "/d", "/e"] }))],
  ["a user with a space", json(svc({ user: "a b" }))],
  ["a user without name", json(svc({ user: ":1" }))],
  ["stop_grace_period below 1s", json(svc({ stop_grace_period: "500ms" }))],
  ["stop_grace_period above 120s", json(svc({ stop_grace_period: "121s" }))],
  ["expose not a number", json(svc({ expose: ["abc"] }))],
  ["expose out of range", json(svc({ expose: ["70000"] }))],
  ["duplicate expose", json(svc({ expose: ["80", "80"] }))],
  ["depends_on an unknown service", json(svc({ depends_on: { db: { condition: "service_started" } } }))],
  ["depends_on itself", json(svc({ depends_on: { app: { condition: "service_started" } } }))],
  ["depends_on with a bad condition", json(svc({ depends_on: { app: { condition: "service_ready" } } }))],
  [
    "service_healthy on a service without health check",
    json({
      services: {
        app: { image: "fred-test/httpd:1", depends_on: { db: { condition: "service_healthy" } } },
        db: { image: "fred-test/httpd:1" },
      },
    }),
  ],
  [
    "a dependency cycle",
    json({
      services: {
        app: { image: "fred-test/httpd:1", depends_on: { db: { condition: "service_started" } } },
        db: { image: "fred-test/httpd:1", depends_on: { app: { condition: "service_started" } } },
      },
    }),
  ],
  ["an uppercase service name", json({ services: { App: { image: "fred-test/httpd:1" } } })],
  ["a service without lease item", json({ services: { web: { image: "fred-test/httpd:1" } } })],
  [
    "a lease item without service",
    json({ services: { app: { image: "fred-test/httpd:1" }, db: { image: "fred-test/httpd:1" } } }),
  ],
  [
    "depends_on in a flat manifest",
    json({ image: "fred-test/httpd:1", depends_on: { x: { condition: "service_started" } } }),
  ],
];

describe("docker backend: bad manifests are refused before anything is created", { skip }, () => {
  let setup: DockerTestSetup;
  let backend: RunningDockerBackend;
  let rx: Receiver;
  let c: SignedClient;
  const items = [{ sku: SKU, quantity: 1, service_name: "app" }];

  before(async () => {
    setup = prepareDockerBackend();
    backend = await startInProcess(setup);
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
  });
  after(async () => {
    await backend?.close();
    await rx?.close();
    await setup?.cleanup();
  });

  async function refused(body: Record<string, unknown>, lease: string, code: string): Promise<void> {
    const res = await c.post("/provision", body);
    assert.equal(res.status, 400, res.text);
    const env = res.json as { error?: unknown; validation_code?: unknown };
    assert.equal(typeof env.error, "string");
    assert.equal(env.validation_code, code, res.text);
    assert.equal((await c.get(`/provisions/${lease}`)).status, 404);
    const left = await dockerCli(["ps", "-aq", "--filter", `label=fred.lease_uuid=${lease}`]);
    assert.equal(left.out.trim(), "", "no container exists");
  }

  for (const [name, text] of INVALID) {
    it(`${name} → 400 invalid_manifest`, async () => {
      const call = provisionBody(rx, Buffer.from(text), items);
      await refused(call.body, call.lease, "invalid_manifest");
    });
  }

  it("no payload at all → 400 invalid_manifest (containers need a manifest)", async () => {
    const call = provisionBody(rx, undefined, items);
    await refused(call.body, call.lease, "invalid_manifest");
  });

  it("an image outside allowed_registries → 400 image_not_allowed", async () => {
    const call = provisionBody(
      rx,
      Buffer.from(json({ services: { app: { image: "quay.io/x/y:1" } } })),
      items,
    );
    await refused(call.body, call.lease, "image_not_allowed");
  });

  it("a SKU without profile → 400 unknown_sku", async () => {
    const call = provisionBody(rx, Buffer.from(json(svc({}))), [
      { sku: randomUUID(), quantity: 1, service_name: "app" },
    ]);
    await refused(call.body, call.lease, "unknown_sku");
  });

  it("leaves the engine without any network of the tenant", async () => {
    const nets = await dockerCli([
      "network",
      "ls",
      "-q",
      "--filter",
      `label=fred.storage_id=${backend.storageId}`,
    ]);
    assert.equal(nets.out.trim(), "");
  });
});
