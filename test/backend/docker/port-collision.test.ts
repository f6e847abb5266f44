import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { after, before, describe, it } from "node:test";
import { instanceName } from "../../../src/backend/docker/names.ts";
import { isHostPortCollision } from "../../../src/backend/docker/startup.ts";
import { FredError } from "../../../src/core/errors.ts";
import { dockerCli, dockerSkip } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import {
  type DockerProcess,
  type DockerTestSetup,
  httpdManifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  spawnDockerBackend,
} from "./helpers.ts";
import { provisionBody } from "./provision-helper.ts";

/**
 * A published port whose engine-chosen host port is already bound by a non-Docker process,
 * provoked for real. The engine hands out dynamic host ports in sequence after the last one
 * it gave (per host IP), so a throwaway container tells us where the sequence stands and
 * this process binds the ports after it. This engine (Docker 20.10, userland proxy) already
 * tries DOCKERD_PICKS ports in a row inside one start call, so a start only fails once that
 * many are taken: one blocked window makes the backend's first start fail and its second
 * one succeed; three windows make every one of its tries fail.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd"] });

/** Host ports one engine start call tries before it reports the collision. */
const DOCKERD_PICKS = 10;
/** Start calls the backend makes per container (START_TRIES in startup.ts). */
const BACKEND_TRIES = 3;
/** host_bind_ip of the test config: the engine keeps one port sequence per host IP. */
const BIND_IP = "127.0.0.1";
/** Other processes may take ports from the same sequence meanwhile; then we set up again. */
const ROUNDS = 3;
const ITEMS = [{ sku: SKU, quantity: 1, service_name: "app" }];

/** Publishes a port on a throwaway container and returns the host port the engine chose. */
async function enginePortNow(): Promise<number> {
  const run = await dockerCli([
    ...["run", "-d", "--label", "fred.test.port-probe=true"],
    ...["-p", `${BIND_IP}::8080`, "fred-test/httpd:1"],
  ]);
  assert.equal(run.code, 0, `probe container did not start: ${run.out}`);
  const id = run.out.trim();
  try {
    const port = await dockerCli(["port", id, "8080/tcp"]);
    const m = /:(\d+)$/m.exec(port.out);
    assert.ok(m, `probe container has no host port: ${port.out}`);
    return Number(m[1]);
  } finally {
    await dockerCli(["rm", "-f", id]);
  }
}

/** Listens on `count` ports from `first`; a port someone else holds is just as taken. */
async function holdPorts(first: number, count: number): Promise<{ release(): Promise<void> }> {
  const servers: Server[] = [];
  for (let port = first; port < first + count; port++) {
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once("error", (err: NodeJS.ErrnoException) =>
        err.code === "EADDRINUSE" ? resolve() : reject(err),
      );
      server.listen(port, BIND_IP, () => {
        servers.push(server);
        resolve();
      });
    });
  }
  return {
    async release() {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    },
  };
}

/** Docker's `--since`/`--until` read "seconds.nanoseconds". */
function engineTime(ms: number): string {
  return `${Math.floor(ms / 1000)}.${String((ms % 1000) * 1_000_000).padStart(9, "0")}`;
}

/**
 * What the engine's event log says about a container's start calls since `sinceMs`: each
 * refused start leaves a network "disconnect" for it (its endpoint is torn down) with no
 * "start"; a start that worked leaves "connect" then "start".
 */
async function startHistory(containerName: string, sinceMs: number) {
  const inspect = await dockerCli(["inspect", "-f", "{{.Id}} {{.State.Status}}", containerName]);
  assert.equal(inspect.code, 0, inspect.out);
  const [id, state] = inspect.out.trim().split(" ");
  const events = await dockerCli([
    ...["events", "--since", engineTime(sinceMs), "--until", engineTime(Date.now())],
    ...["--filter", "type=container", "--filter", "type=network", "--format", "{{json .}}"],
  ]);
  assert.equal(events.code, 0, events.out);
  let refused = 0;
  let started = false;
  for (const line of events.out.split("\n").filter(Boolean)) {
    const e = JSON.parse(line) as {
      Type: string;
      Action: string;
      Actor: { ID: string; Attributes?: Record<string, string> };
    };
    if (e.Type === "container" && e.Actor.ID === id && e.Action === "start") started = true;
    if (!started && e.Type === "network" && e.Action === "disconnect" && e.Actor.Attributes?.container === id)
      refused++;
  }
  return { refused, started, state };
}

describe("host port collision: which engine failures are worth another start", () => {
  const engineError = (statusCode: number, message: string) =>
    Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode, json: { message } });

  it("matches the engine's two wordings, in any case, on a 5xx answer only", () => {
    const allocated =
      "driver failed programming external connectivity: Bind for 0.0.0.0:40001 failed: port is already allocated";
    const inUse = "Error starting userland proxy: listen tcp4 127.0.0.1:32839: bind: Address Already In Use";
    assert.equal(isHostPortCollision(engineError(500, allocated)), true);
    assert.equal(isHostPortCollision(engineError(500, inUse)), true);
    assert.equal(
      isHostPortCollision(engineError(500, "OCI runtime create failed: exec format error")),
      false,
    );
    assert.equal(isHostPortCollision(engineError(404, `no such container; ${inUse}`)), false);
    const timeout = new FredError("ERR_DOCKER_CONTAINER_START_TIMEOUT", `docker start: ${inUse}`);
    assert.equal(isHostPortCollision(timeout), false, "no engine answer is no collision report");
  });
});

describe("docker backend: host port taken by another process", { skip }, () => {
  let setup: DockerTestSetup;
  let backend: DockerProcess;
  let rx: Receiver;
  let c: SignedClient;

  before(async () => {
    setup = prepareDockerBackend();
    // warn level whatever TEST_LOG_LEVEL says: the kit's "left for recovery" line is awaited.
    backend = await spawnDockerBackend(setup.configPath, 60_000, { FRED_LOG_LEVEL: "warn" });
    rx = await startReceiver(SECRET);
    c = signedClient(backend.ready.url, SECRET);
  });
  after(async () => {
    await backend?.stop();
    await rx?.close();
    await setup?.cleanup();
    const leftovers = await probeLeftovers();
    if (leftovers.length > 0) await dockerCli(["rm", "-f", ...leftovers]);
  });

  /**
   * One round: learn where the engine's sequence stands, hold the next `windows` ×
   * DOCKERD_PICKS ports, provision a published-port lease, and wait until the backend either
   * settles it (callback) or gives up on it (the kit's "left for recovery" log line).
   */
  async function provisionPastHeldPorts(windows: number) {
    const last = await enginePortNow();
    const blocked = { from: last + 1, to: last + windows * DOCKERD_PICKS };
    const since = Date.now() - 1000;
    const hold = await holdPorts(blocked.from, blocked.to - blocked.from + 1);
    const call = provisionBody(rx, httpdManifest(), ITEMS);
    const callback = () =>
      rx.deliveries.find((d) => d.route === "operation" && d.body.lease_uuid === call.lease)?.body;
    const gaveUp = () =>
      backend
        .stderr()
        .split("\n")
        .some((l) => l.includes(call.lease) && l.includes("left for recovery"));
    try {
      const res = await c.post("/provision", call.body);
      assert.equal(res.status, 202, res.text);
      await until(
        () => callback() !== undefined || gaveUp(),
        "the provision to settle or be given up",
        60_000,
      );
    } finally {
      await hold.release();
    }
    const history = await startHistory(instanceName(call.lease, "app", 0), since);
    return { call, blocked, history, callback: callback(), gaveUp: gaveUp() };
  }

  it("starts the container again when the engine's port pick was taken, and the lease comes up", async () => {
    const misses: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const { call, blocked, history, callback, gaveUp } = await provisionPastHeldPorts(1);
      assert.equal(gaveUp, false, "the backend gave up on the lease after the port collision");
      assert.equal(callback?.status, "success", `provision failed: ${JSON.stringify(callback)}`);
      const info = await c.get(`/info/${call.lease}`);
      assert.equal(info.status, 200, info.text);
      const ports = (info.json as { ports?: Record<string, { host_port: string }> }).ports;
      const port = Number(ports?.["8080/tcp"]?.host_port);
      if (history.refused === 0) {
        misses.push(
          `round ${round}: held ${blocked.from}-${blocked.to}, the engine's first pick was ${port}`,
        );
        continue;
      }
      assert.ok(history.started, "the engine logged the successful start");
      assert.ok(
        backend.stderr().includes("host port taken by another process; starting the container again"),
        "the backend logged the retry",
      );
      assert.ok(history.refused < BACKEND_TRIES, `refused ${history.refused} times yet started`);
      assert.notEqual(port, blocked.from);
      assert.ok(port < blocked.from || port > blocked.to, `published on held port ${port}`);
      // A started container need not be listening yet (docker-proxy resets a connection the
      // app does not accept), so the page is read once it answers, within a bound.
      const page = await until(
        () =>
          fetch(`http://${BIND_IP}:${port}/`).then(
            (reply) => reply.text(),
            () => undefined,
          ),
        "the published port to serve the workload's page",
        10_000,
      );
      assert.equal(page.trim(), "fred-test-httpd");
      return;
    }
    assert.fail(
      `no start collided in ${ROUNDS} rounds: other processes took ports from the engine's sequence ` +
        `between the probe and the provision, so the held window was skipped (${misses.join("; ")})`,
    );
  });

  it(`gives up after ${BACKEND_TRIES} colliding starts: the provision is left ambiguous for recovery`, async () => {
    const misses: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const { blocked, history, callback, gaveUp } = await provisionPastHeldPorts(BACKEND_TRIES);
      assert.ok(history.refused <= BACKEND_TRIES, `the engine refused ${history.refused} start calls`);
      if (history.started) {
        assert.ok(history.refused < BACKEND_TRIES, `ran after ${history.refused} refused starts`);
        misses.push(
          `round ${round}: held ${blocked.from}-${blocked.to}, refused ${history.refused} times, then ran`,
        );
        continue;
      }
      assert.equal(history.refused, BACKEND_TRIES, "one engine start call per try, each refused");
      assert.equal(history.state, "created", "the container never ran");
      assert.equal(gaveUp, true, "the kit logged the ambiguous outcome");
      assert.equal(callback, undefined, "an ambiguous start sends no callback");
      return;
    }
    assert.fail(
      `every round ended with a running container: other processes took ports from the engine's ` +
        `sequence, so fewer than ${BACKEND_TRIES} starts collided (${misses.join("; ")})`,
    );
  });
});

async function probeLeftovers(): Promise<string[]> {
  const ps = await dockerCli(["ps", "-aq", "--filter", "label=fred.test.port-probe=true"]);
  return ps.out.split(/\s+/).filter(Boolean);
}
