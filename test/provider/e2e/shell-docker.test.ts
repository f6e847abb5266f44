import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  type DockerProcess,
  type DockerTestSetup,
  prepareDockerBackend,
  SECRET,
  spawnDockerBackend,
} from "../../backend/docker/helpers.ts";
import { dockerCli, dockerSkip } from "../../support/docker.ts";
import { runFred, until } from "../../support/index.ts";
import { call, TenantKey } from "../api/tenant-client.ts";
import { ShellClient } from "./shell-client.ts";
import { Stack, sha256 } from "./stack.ts";

/**
 * `GET /v1/leases/{uuid}/shell` end to end on real containers: a devnet, `fred backend
 * docker` and providerd, each a real process, and the tenant's WebSocket (and `fred lease
 * shell`) in front. shell.test.ts covers the route's rules on the mock backend; this file is
 * what only the real path shows: the engine's exec stream split into channels 1 and 2, the
 * exit code read back from the engine, and a session the tenant closes leaving no process in
 * the container. One stack and one lease serve the whole file, to keep CI time low.
 */
const skip = await dockerSkip({ btrfs: true, images: ["unhealthy"] });

/** Idles forever as PID 1 (its readiness file only matters to a manifest health check). */
const WORKLOAD = Buffer.from(JSON.stringify({ image: "fred-test/unhealthy:1" }));
const SCRIPT = ["sh", "-c", "echo out; echo err >&2; exit 3"];

describe("tenant shell on the real Docker backend (devnet + providerd + fred backend docker)", {
  skip,
}, () => {
  const stack = new Stack();
  let setup: DockerTestSetup | undefined;
  let backend: DockerProcess | undefined;
  let tenant: TenantKey;
  let lease: string;
  let container: string;

  before(async () => {
    await stack.start(
      () => [],
      async (s) => {
        setup = prepareDockerBackend({
          sku_mapping: { [s.sku("docker-small")]: "tiny" },
          sku_profiles: { tiny: { cpu_cores: 0.1, memory_mb: 32, disk_mb: 0 } },
          container_stop_timeout: "1s",
        });
        backend = await spawnDockerBackend(setup.configPath, 120_000);
        s.extraConfig = {
          backends: [{ name: "docker-1", url: backend.ready.url, hmac_secret: SECRET, default: true }],
        };
      },
    );
    tenant = new TenantKey(stack.account("tenant1").private_key_hex);
    await stack.startProviderd();

    [lease] = (await stack.createLeases(1, "docker-small", sha256(WORKLOAD))) as [string];
    const hash = Buffer.from(sha256(WORKLOAD)).toString("hex");
    const upload = await call(stack.api, `/v1/leases/${lease}/data`, tenant.payload(lease, hash), {
      method: "POST",
      body: WORKLOAD,
      headers: { "content-type": "application/octet-stream" },
    });
    assert.equal(upload.status, 202, upload.text);
    await stack.waitState([lease], "LEASE_STATE_ACTIVE", 120_000);
    // providerd may take the chain's ACTIVE a moment after the chain does; the shell route
    // asks providerd, so wait for its own view of the lease.
    await until(
      async () => {
        const r = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
        return r.body.state === "LEASE_STATE_ACTIVE" && r.body.provision_status === "ready";
      },
      "providerd reads the lease ACTIVE and ready",
      { timeoutMs: 120_000, intervalMs: 200, context: () => stack.providerd?.logTail() ?? "" },
    );
    const ids = (
      await dockerCli([
        "ps",
        "-q",
        "--filter",
        `label=fred.lease_uuid=${lease}`,
        "--filter",
        "status=running",
      ])
    ).out
      .split(/\s+/)
      .filter(Boolean);
    assert.equal(ids.length, 1, "one running container for the lease");
    container = ids[0] as string;
  });

  after(async () => {
    await stack.close();
    await backend?.stop();
    await setup?.cleanup();
  });

  const shell = (command: string[]) =>
    new ShellClient(
      `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/shell?${command.map((a) => `command=${encodeURIComponent(a)}`).join("&")}`,
      { headers: { authorization: `Bearer ${tenant.fresh(lease)}` } },
    ).open();

  /** The container's processes as the engine lists them (`docker top`). */
  const top = async () => {
    const r = await dockerCli(["top", container]);
    assert.equal(r.code, 0, r.out);
    return r.out;
  };

  it("sh -c: stdout on channel 1, stderr on channel 2, exit code 3 in the status", {
    timeout: 60_000,
  }, async () => {
    const s = await shell(SCRIPT);
    assert.equal(s.ws.protocol, "v5.channel.k8s.io");
    assert.deepEqual(await s.closed, { code: 1000, reason: "exited" });
    assert.equal(s.stdout, "out\n");
    assert.equal(s.stderr, "err\n");
    assert.equal(s.exitCode, 3);
  });

  it("fred lease shell -- sh -c ...: the streams on ours, and the CLI exits 3", {
    timeout: 60_000,
  }, async () => {
    const r = await runFred([
      "lease",
      "shell",
      lease,
      "--from",
      "tenant1",
      "--home",
      join(stack.dir, "devnet"),
      "--rpc",
      stack.devnet.rpc,
      "--provider-url",
      stack.api,
      "--",
      ...SCRIPT,
    ]);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout, "out\n");
    assert.match(r.stderr, /^err$/m);
  });

  it("a session the tenant closes leaves no process in the container (sleep 1000 ignores stdin)", {
    timeout: 90_000,
  }, async () => {
    const s = await shell(["sleep", "1000"]);
    await until(async () => (await top()).includes("sleep 1000"), "the sleep runs in the container", {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    s.ws.close();
    await s.closed;
    // PID 1 of the image is itself a `sleep 2147483647`: only the session's own is looked for.
    await until(async () => !/sleep 1000\b/.test(await top()), "no sleep 1000 left in docker top", {
      timeoutMs: 30_000,
      intervalMs: 200,
      context: () => backend?.logTail() ?? "",
    });
  });
});
