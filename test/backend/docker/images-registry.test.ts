import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import { loadDockerBackendConfig } from "../../../src/backend/docker/config.ts";
import { type RunningDockerBackend, startDockerBackend } from "../../../src/backend/docker/main.ts";
import { instanceName } from "../../../src/backend/docker/names.ts";
import { dockerCli, dockerSkip } from "../../support/docker.ts";
import { registrySkip, startRegistry, type TestRegistry } from "../../support/registry.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import { type DockerTestSetup, manifest, prepareDockerBackend, SECRET, SKU } from "./helpers.ts";
import { provisionAndWait, provisionBody } from "./provision-helper.ts";

/**
 * Images against a real registry (Debian's docker-registry on loopback, TLS, htpasswd):
 * with image_pull_policy `always` every provision and update pulls and pins the digest,
 * restart keeps the pinned digest whatever the host's tag says later, a private image
 * pulls only with its service's credentials, and the password shows up in no answer,
 * callback, metric or log line of the run.
 */
const skip = registrySkip() || (await dockerSkip({ images: ["httpd"] }));

const PASSWORD = `pw-${randomUUID()}`;
const USER = "tenant-puller";
const BASE = "fred-test/httpd:1";

describe("docker backend: pull, pin and private registries", { skip }, () => {
  let pub: TestRegistry;
  let priv: TestRegistry;
  let setup: DockerTestSetup;
  let backend: RunningDockerBackend;
  let rx: Receiver;
  let c: SignedClient;
  const logLines: string[] = [];
  /** Every answer the backend gave in this file, for the final grep. */
  const answers: string[] = [];
  const items = [{ sku: SKU, quantity: 1, service_name: "app" }];

  const get = async (uri: string) => {
    const res = await c.get(uri);
    answers.push(res.text);
    return res;
  };
  const post = async (uri: string, body: unknown) => {
    const res = await c.post(uri, body);
    answers.push(res.text);
    return res;
  };
  const appManifest = (service: Record<string, unknown>) =>
    manifest({ app: { ports: { "8080/tcp": {} }, ...service } });
  const releases = async (lease: string) => {
    const res = await get(`/releases/${lease}`);
    assert.equal(res.status, 200, res.text);
    const list = res.json as Record<string, unknown>[];
    // The manifests are base64 on the wire: searched decoded too.
    for (const r of list) answers.push(Buffer.from(String(r.manifest ?? ""), "base64").toString("utf8"));
    return list;
  };
  const containerImage = async (lease: string) => {
    const out = await dockerCli([
      "inspect",
      "--format",
      "{{.Config.Image}} {{.Image}}",
      instanceName(lease, "app", 0),
    ]);
    assert.equal(out.code, 0, out.out);
    const [ref = "", id = ""] = out.out.trim().split(" ");
    return { ref, id };
  };
  const imageId = async (ref: string) => {
    const out = await dockerCli(["image", "inspect", "--format", "{{.Id}}", ref]);
    assert.equal(out.code, 0, out.out);
    return out.out.trim();
  };
  const maintenance = async (
    kind: "restart" | "update",
    lease: string,
    url: string,
    payload?: Uint8Array,
  ) => {
    const id = randomUUID();
    const res = await post(`/${kind}`, {
      lease_uuid: lease,
      maintenance_id: id,
      callback_url: url,
      ...(payload ? { payload: Buffer.from(payload).toString("base64") } : {}),
    });
    assert.equal(res.status, 202, res.text);
    await rx.waitFor((r) => r.deliveries.some((d) => d.body.maintenance_id === id), 120_000);
    return rx.deliveries.find((d) => d.body.maintenance_id === id)?.body ?? {};
  };
  const failure = async (lease: string) => {
    const res = await get(`/provisions/${lease}`);
    const body = res.json as { status: string; reason?: string; message?: string };
    return body;
  };

  before(async () => {
    pub = await startRegistry();
    // Off loopback, so the engine reports the registry's own refusal (see startRegistry).
    priv = await startRegistry({ auth: { username: USER, password: PASSWORD }, onHostAddress: true });
    setup = prepareDockerBackend({
      image_pull_policy: "always",
      image_pull_timeout: "60s",
      // httpd ignores SIGTERM: the update and restart stop it at this grace's end.
      container_stop_timeout: "2s",
      allowed_registries: [pub.host, priv.host],
      startup_verify_duration: "0s",
    });
    const config = loadDockerBackendConfig(setup.configPath, {});
    const logger = pino({ level: "trace" }, { write: (line: string) => void logLines.push(line) });
    backend = await startDockerBackend(config, { logger });
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
  });
  after(async () => {
    await backend?.close();
    await rx?.close();
    await setup?.cleanup();
    await pub?.[Symbol.asyncDispose]();
    await priv?.[Symbol.asyncDispose]();
  });

  it("an update naming the same moved tag runs the new digest; releases show both; restart keeps the pin", async () => {
    const first = await pub.push(BASE, "app:1");
    const m = appManifest({ image: `${pub.host}/app:1` });
    const call = provisionBody(rx, m, items);
    assert.equal((await provisionAndWait(c, rx, call, 120_000)).status, "success");
    const url = `${rx.url}/callbacks/provision?lifecycle_id=${call.op}`;
    assert.equal((await containerImage(call.lease)).ref, first, "created from the digest, not the tag");
    let history = await releases(call.lease);
    assert.equal(history[0]?.image_digest, first);
    assert.deepEqual(history[0]?.image_digests, { app: first });

    const second = await pub.push(BASE, "app:1");
    assert.notEqual(second, first);
    assert.equal((await maintenance("update", call.lease, url, m)).status, "success");
    history = await releases(call.lease);
    assert.deepEqual(
      history.map((r) => [r.version, r.status, r.image_digest]),
      [
        [1, "superseded", first],
        [2, "active", second],
      ],
    );
    const running = await containerImage(call.lease);
    assert.equal(running.ref, second);
    assert.equal(running.id, await imageId(second));

    // The tag moves again and the host follows it; a restart still runs release 2's digest.
    const third = await pub.push(BASE, "app:1");
    const pulled = await dockerCli(["pull", `${pub.host}/app:1`], 120_000);
    assert.equal(pulled.code, 0, pulled.out);
    assert.equal(await imageId(`${pub.host}/app:1`), await imageId(third));
    assert.equal((await maintenance("restart", call.lease, url)).status, "success");
    const restarted = await containerImage(call.lease);
    assert.equal(restarted.ref, second);
    assert.equal(restarted.id, await imageId(second));
    assert.notEqual(restarted.id, await imageId(third));
  });

  it("a re-provision of the same manifest after the workload died keeps the earlier release's pin", async () => {
    const first = await pub.push(BASE, "lost:1");
    const m = appManifest({ image: `${pub.host}/lost:1` });
    const call = provisionBody(rx, m, items);
    assert.equal((await provisionAndWait(c, rx, call, 120_000)).status, "success");
    await pub.push(BASE, "lost:1"); // the tag moves while the lease runs
    const killed = await dockerCli(["kill", instanceName(call.lease, "app", 0)]);
    assert.equal(killed.code, 0, killed.out);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${call.lease}:failed`), 60_000);
    const again = provisionBody(rx, m, items, { lease: call.lease });
    assert.equal((await provisionAndWait(c, rx, again, 120_000)).status, "success");
    assert.equal((await containerImage(call.lease)).ref, first);
    const history = await releases(call.lease);
    assert.deepEqual(
      history.map((r) => r.image_digest),
      [first, first],
    );
  });

  it("an image the registry does not have fails ImagePullFailed (not found), in tenant words", async () => {
    const call = provisionBody(rx, appManifest({ image: `${pub.host}/no-such-app:1` }), items);
    assert.equal((await provisionAndWait(c, rx, call, 120_000)).status, "failed");
    const f = await failure(call.lease);
    assert.equal(f.reason, "ImagePullFailed");
    assert.equal(f.message, "the container image was not found in its registry");
  });

  it("a private image fails ImagePullFailed (unauthorized) with wrong credentials, and without any", async () => {
    await priv.push(BASE, "private-app:1");
    const image = `${priv.host}/private-app:1`;
    const wrong = { host: priv.host, username: USER, password: "not-the-password" };
    const call = provisionBody(rx, appManifest({ image, credentials: wrong }), items);
    assert.equal((await provisionAndWait(c, rx, call, 120_000)).status, "failed");
    const f = await failure(call.lease);
    assert.equal(f.reason, "ImagePullFailed");
    assert.equal(f.message, "the registry refused to serve the container image (unauthorized)");
    const bare = provisionBody(rx, appManifest({ image }), items);
    assert.equal((await provisionAndWait(c, rx, bare, 120_000)).status, "failed");
    const g = await failure(bare.lease);
    assert.equal(g.reason, "ImagePullFailed");
    assert.equal(g.message, "the registry refused to serve the container image (unauthorized)");
  });

  it("a private image pulls with its credentials; the password is masked in releases", async () => {
    const pushed = await priv.push(BASE, "private-app:2");
    const m = appManifest({
      image: `${priv.host}/private-app:2`,
      credentials: { host: priv.host, username: USER, password: PASSWORD },
    });
    const call = provisionBody(rx, m, items);
    assert.equal((await provisionAndWait(c, rx, call, 120_000)).status, "success");
    assert.equal((await containerImage(call.lease)).ref, pushed);
    const [release] = await releases(call.lease);
    const shown = JSON.parse(Buffer.from(String(release?.manifest), "base64").toString("utf8"));
    assert.deepEqual(shown.services.app.credentials, {
      host: priv.host,
      username: USER,
      password: "********",
    });
    for (const read of ["provisions", "info", "logs", "releases"]) await get(`/${read}/${call.lease}`);
    await get("/provisions");
    await get("/stats");
  });

  it("bad credentials are refused before anything runs", async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [
        { image: `${priv.host}/private-app:2`, credentials: { host: priv.host, username: USER } },
        "invalid_manifest",
        /credentials\/password/,
      ],
      [
        {
          image: `${priv.host}/private-app:2`,
          credentials: { host: priv.host, username: USER, password: PASSWORD, x: 1 },
        },
        "invalid_manifest",
        /credentials/,
      ],
      [
        {
          image: `${priv.host}/private-app:2`,
          credentials: { host: pub.host, username: USER, password: PASSWORD },
        },
        "invalid_manifest",
        /credentials\/host: credentials\.host "127\.0\.0\.1:\d+" is not the registry of the image/,
      ],
      [
        {
          image: "registry.example.com/app:1",
          credentials: { host: "registry.example.com", username: USER, password: PASSWORD },
        },
        "image_not_allowed",
        /registry "registry\.example\.com" is not allowed/,
      ],
    ];
    for (const [service, code, message] of cases) {
      const call = provisionBody(rx, appManifest(service), items);
      const res = await post("/provision", call.body);
      assert.equal(res.status, 400, res.text);
      const body = res.json as { validation_code?: string; error?: string };
      assert.equal(body.validation_code, code, res.text);
      assert.match(String(body.error), message);
    }
  });

  it("the password appears in no answer, callback, metric or log line of this file", async () => {
    answers.push((await get("/metrics")).text);
    const everything = [
      ...answers,
      ...rx.deliveries.map((d) => JSON.stringify(d)),
      ...logLines,
      pub.output(),
      priv.output(),
    ].join("\n");
    assert.ok(logLines.length > 0 && answers.length > 10, "the run produced output to search");
    assert.ok(everything.includes(USER), "the search can find what the tests sent");
    assert.equal(everything.includes(PASSWORD), false);
    assert.match(everything, /fred_docker_image_pull_failures_total\{reason="unauthorized"\} [1-9]/);
    assert.match(everything, /fred_docker_image_pull_failures_total\{reason="not_found"\} [1-9]/);
    assert.match(everything, /fred_docker_image_pull_seconds_count\{outcome="ok"\} [1-9]/);
    assert.match(everything, /fred_docker_image_pulls_total\{outcome="success"\} [1-9]/);
    assert.match(everything, /fred_docker_image_pulls_total\{outcome="failed"\} [1-9]/);
  });
});
