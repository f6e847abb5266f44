import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { instanceName } from "../../../src/backend/docker/names.ts";
import { dockerCli, dockerSkip, restartDockerd } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import {
  type DockerProcess,
  type DockerTestSetup,
  manifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  spawnDockerBackend,
} from "./helpers.ts";
import { outboxDrained, provisionAndWait, provisionBody } from "./provision-helper.ts";

/**
 * Faults with real processes: the backend killed with SIGKILL in the middle of a
 * provision, and the Docker engine itself restarted under running leases.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd"] });

const containersOf = async (label: string) =>
  (await dockerCli(["ps", "-a", "--filter", `label=${label}`, "--format", "{{.Names}} {{.State}}"])).out
    .split("\n")
    .filter(Boolean)
    .sort();

const items = [{ sku: SKU, quantity: 1, service_name: "app" }];
const quickStop = {
  image: "fred-test/httpd:1",
  init: true,
  stop_grace_period: "1s",
  ports: { "8080/tcp": {} },
};

describe("docker backend: faults", { skip }, () => {
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver(SECRET);
  });
  after(async () => {
    await rx?.close();
  });

  describe("kill -9 mid-provision", () => {
    let setup: DockerTestSetup;
    let proc: DockerProcess | undefined;
    before(() => {
      // A long verification window keeps the provision in flight while we kill the process.
      setup = prepareDockerBackend({ startup_verify_duration: "60s" });
    });
    after(async () => {
      await proc?.kill();
      await setup?.cleanup();
    });

    it("restart rebuilds state, delivers the callback, and leaves no duplicate or orphan", async () => {
      proc = await spawnDockerBackend(setup.configPath);
      const c: SignedClient = signedClient(proc.ready.url, SECRET);
      const call = provisionBody(rx, manifest({ app: quickStop }), items);
      assert.equal((await c.post("/provision", call.body)).status, 202);
      const name = instanceName(call.lease, "app", 0);
      await until(
        async () => (await containersOf(`fred.lease_uuid=${call.lease}`)).includes(`${name} running`),
        "the container to run",
      );
      await proc.kill();
      assert.equal(
        rx.deliveries.some((d) => d.body.lease_uuid === call.lease),
        false,
        "no callback before the crash",
      );

      proc = await spawnDockerBackend(setup.configPath);
      const c2 = signedClient(proc.ready.url, SECRET);
      await rx.waitFor(
        (r) => r.deliveries.some((d) => d.route === "operation" && d.body.lease_uuid === call.lease),
        60_000,
      );
      const result = rx.deliveries.find((d) => d.route === "operation" && d.body.lease_uuid === call.lease);
      assert.equal(result?.body.status, "success", JSON.stringify(result?.body));
      assert.deepEqual(
        await containersOf(`fred.storage_id=${setup.storageId}`),
        [`${name} running`],
        "exactly one container",
      );
      const p = (await c2.get(`/provisions/${call.lease}`)).json as { status: string };
      assert.equal(p.status, "ready");
      const info = (await c2.get(`/info/${call.lease}`)).json as {
        ports: Record<string, { host_port: string }>;
      };
      const port = info.ports["8080/tcp"]?.host_port;
      assert.equal((await (await fetch(`http://127.0.0.1:${port}/`)).text()).trim(), "fred-test-httpd");
    });
  });

  describe("a container dies while the backend is down", () => {
    let setup: DockerTestSetup;
    let proc: DockerProcess | undefined;
    before(() => {
      setup = prepareDockerBackend();
    });
    after(async () => {
      await proc?.kill();
      await setup?.cleanup();
    });

    it("the restarted backend reports the lease failed", async () => {
      proc = await spawnDockerBackend(setup.configPath);
      const call = provisionBody(rx, manifest({ app: quickStop }), items);
      assert.equal(
        (await provisionAndWait(signedClient(proc.ready.url, SECRET), rx, call)).status,
        "success",
      );
      await outboxDrained(proc.ready.url); // the success is recorded as delivered before the crash
      await proc.kill();
      const kill = await dockerCli(["kill", instanceName(call.lease, "app", 0)]);
      assert.equal(kill.code, 0, kill.out);
      proc = await spawnDockerBackend(setup.configPath);
      await rx.waitFor((r) => r.effects.includes(`lifecycle:${call.lease}:failed`), 60_000);
      const p = (await signedClient(proc.ready.url, SECRET).get(`/provisions/${call.lease}`)).json as {
        status: string;
        terminal_budget: unknown;
      };
      assert.equal(p.status, "failed");
      // Found dead only after the backend was away: the platform may have ended it, so
      // it does not count toward the consecutive-failure budget.
      assert.deepEqual(p.terminal_budget, { verdict: "retry", consecutive_failures: 0 });
      assert.equal((await containersOf(`fred.lease_uuid=${call.lease}`)).length, 1, "not recreated");
    });
  });

  describe("the Docker engine restarts under running leases", () => {
    let setup: DockerTestSetup;
    let proc: DockerProcess | undefined;
    before(() => {
      setup = prepareDockerBackend();
    });
    after(async () => {
      await proc?.stop();
      await setup?.cleanup();
    });

    it("reconnects, reports failed for leases whose containers died, never makes a second copy", async () => {
      proc = await spawnDockerBackend(setup.configPath);
      const c = signedClient(proc.ready.url, SECRET);
      const calls = [
        provisionBody(rx, manifest({ app: quickStop }), items),
        provisionBody(rx, manifest({ app: quickStop }), items),
      ];
      for (const call of calls) assert.equal((await provisionAndWait(c, rx, call)).status, "success");
      await outboxDrained(proc.ready.url);

      const health = async () => {
        const res = await fetch(`${proc!.ready.url}/health`);
        return { status: res.status, body: (await res.json()) as { status: string; error?: string } };
      };
      assert.deepEqual(await health(), { status: 200, body: { status: "healthy" } });
      await restartDockerd(async () => {
        const down = await health();
        assert.equal(down.status, 503, "GET /health reports the engine being down");
        assert.deepEqual(down.body, { status: "unhealthy", error: "substrate unavailable" });
      });
      // The unauthenticated answer carries no engine text; the operator's log line does.
      const healthLine =
        /^(?=.*"msg":"health check: unhealthy")(?=.*"part":"substrate")(?=.*docker engine is not answering)/m;
      await until(async () => healthLine.test(proc!.stderr()), "the engine text in the health log line");
      await until(async () => (await health()).status === 200, "/health healthy again", 30_000);
      for (const call of calls) {
        await rx.waitFor((r) => r.effects.includes(`lifecycle:${call.lease}:failed`), 60_000);
        const p = (await c.get(`/provisions/${call.lease}`)).json as { status: string; reason: string };
        assert.equal(p.status, "failed");
        assert.equal(p.reason, "ContainerExited");
        const copies = await containersOf(`fred.lease_uuid=${call.lease}`);
        assert.equal(copies.length, 1, `one container, not restarted or recreated: ${copies.join(", ")}`);
        assert.doesNotMatch(copies[0] ?? "", /running/);
      }
      assert.equal(proc.child.exitCode, null, "the backend survived the engine restart");

      const fresh = provisionBody(rx, manifest({ app: quickStop }), items);
      assert.equal(
        (await provisionAndWait(c, rx, fresh)).status,
        "success",
        "it provisions again after reconnecting",
      );
    });
  });
});
