import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { lstatSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { launchFred, REPO_ROOT, until } from "../../support/index.ts";
import { call, TenantKey } from "../api/tenant-client.ts";
import { WsClient, wsUrl } from "../api/ws-client.ts";
import { ShellClient } from "./shell-client.ts";
import { mockSkus, Stack } from "./stack.ts";

/**
 * A backend co-located with providerd, reached over a Unix socket: the devnet, one mock
 * backend listening on `unix:<stack dir>/mock-1.sock` and providerd whose backends[0].url
 * is that address, all real processes. Every kind of contract traffic crosses the socket:
 * signed requests (provision, status, logs), the streaming log read, the shell WebSocket.
 * Then the socket's life: a second backend on the live socket is refused, and after a
 * kill -9 the stale file is replaced by the restarted backend.
 */
const stack = new Stack();
const ACTIVE = "LEASE_STATE_ACTIVE";
let tenant: TenantKey;
let socketPath: string;

before(async () => {
  await stack.start(
    (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_ADDR: s.mockSocket(0) }],
    (s) => {
      tenant = new TenantKey(s.account("tenant1").private_key_hex);
      s.extraConfig = { token_tracker_db_path: join(s.dir, "tokens.db") };
    },
  );
  socketPath = stack.mockSocket(0).slice("unix:".length);
  await stack.startProviderd();
});

after(() => stack.close());

async function activeLease(): Promise<string> {
  const [lease] = await stack.createLeases(1, "docker-small");
  await stack.waitState([lease!], ACTIVE);
  await readyThroughProviderd(lease!);
  return lease!;
}

async function readyThroughProviderd(lease: string): Promise<void> {
  await until(
    async () => {
      const res = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
      return res.body.state === ACTIVE && res.body.provision_status === "ready";
    },
    "providerd reads the lease ACTIVE and ready from the backend",
    { context: () => stack.providerd?.logTail() ?? "" },
  );
}

let lease: string;

describe("a mock backend on a Unix socket, reached by providerd", () => {
  before(async () => {
    lease = await activeLease();
  });

  it("announces unix:/path, the url providerd was given, on a socket file of mode 0660", () => {
    assert.equal(stack.mocks[0]!.ready.url, `unix:${socketPath}`);
    const stat = lstatSync(socketPath);
    assert.ok(stat.isSocket());
    assert.equal((stat.mode & 0o777).toString(8), "660");
  });

  it("a lease provisions to ACTIVE over it; status and logs are read through it", async () => {
    const status = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
    assert.equal(status.status, 200, status.text);
    assert.equal(status.body.provision_status, "ready");
    const logs = await call(stack.api, `/v1/leases/${lease}/logs`, tenant.access(lease));
    assert.equal(logs.status, 200, logs.text);
    assert.deepEqual(Object.keys(logs.body.logs as object), ["app/0"]);
    const rows = await stack.workloads([lease]);
    assert.deepEqual(rows, [{ lease_uuid: lease, backend: "mock-1", status: rows[0]?.status }]);
  });

  it("streams logs (the held-open contract read) over it", async () => {
    const ws = await new WsClient(
      wsUrl(stack.api, `/v1/leases/${lease}/logs?follow=true&tail=1&token=${tenant.access(lease)}`),
    ).open();
    try {
      // The tail, then a line the mock's workload writes every second while followed.
      assert.equal((await ws.frame(1)).service, "app");
      const live = await ws.frame(2);
      assert.deepEqual([live.service, live.instance], ["app", 0]);
    } finally {
      ws.close();
    }
  });

  it("runs a shell session over it: both streams and the exit code", async () => {
    const s = await new ShellClient(
      `${wsUrl(stack.api, `/v1/leases/${lease}/shell`)}?command=sh&command=-c&command=${encodeURIComponent("echo out; echo err >&2; exit 3")}`,
      { headers: { authorization: `Bearer ${tenant.fresh(lease)}` } },
    ).open();
    assert.deepEqual(await s.closed, { code: 1000, reason: "exited" });
    assert.equal(s.stdout, "out\n");
    assert.equal(s.stderr, "err\n");
    assert.equal(s.exitCode, 3);
  });

  it("the dashboard's fleet view names the socket", async () => {
    const token = readFileSync(join(dirname(stack.placementPath), "operator-token"), "utf8").trim();
    const res = await fetch(`${stack.operator}/api/fleet`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    const { backends } = (await res.json()) as { backends: { name: string; url_host: string }[] };
    assert.deepEqual(
      backends.map((b) => [b.name, b.url_host]),
      [["mock-1", `unix:${socketPath}`]],
    );
  });

  it("the image's health probe takes FRED_HEALTH_URL=unix:/path", () => {
    const probe = (url: string) =>
      spawnSync(process.execPath, [join(REPO_ROOT, "deploy/container/healthcheck.mjs")], {
        env: { ...process.env, FRED_HEALTH_URL: url },
        encoding: "utf8",
      });
    assert.equal(probe(`unix:${socketPath}`).status, 0);
    const missing = probe(`unix:${socketPath}.absent`);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /unhealthy: GET unix:.*\.absent: .*ENOENT/);
  });

  it("a second backend on the live socket is refused; after kill -9 the stale file is replaced", async () => {
    const env = {
      ...stack.mockEnvs[0],
      MOCK_BACKEND_DB_PATH: "",
      MOCK_BACKEND_STORAGE_ID: crypto.randomUUID(),
    };
    const second = await launchFred(["backend", "mock"], { label: "second mock", env }).then(
      async (running) => {
        await running.stop();
        return new Error("a second backend listened on the live socket");
      },
      (err: Error) => err,
    );
    assert.match(second.message, /exited with 1 before it was ready/);
    assert.match(
      second.message,
      /another process is listening on .*mock-1\.sock; stop it or choose another path/,
    );
    assert.ok(lstatSync(socketPath).isSocket(), "the live backend's socket is left alone");
    await readyThroughProviderd(lease);

    await stack.mocks[0]!.kill();
    assert.ok(lstatSync(socketPath).isSocket(), "a killed backend leaves its socket file behind");
    await stack.restartMock(0);
    assert.equal((lstatSync(socketPath).mode & 0o777).toString(8), "660");
    await readyThroughProviderd(lease);
    const status = await call(stack.api, `/v1/leases/${lease}/status`, tenant.fresh(lease));
    assert.equal(status.status, 200, status.text);
  });

  it("a clean stop removes the socket file", async () => {
    await stack.stopMock(0);
    assert.throws(() => lstatSync(socketPath), /ENOENT/);
    await stack.restartMock(0);
  });
});
