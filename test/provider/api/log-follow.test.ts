import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { LOG_CLOSE, LOG_FOLLOW_LIMITS } from "../../../src/provider/api/log-follows.ts";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { launchFred, until } from "../../support/index.ts";
import { mockSkus, SECRETS, Stack } from "../e2e/stack.ts";
import { call, TenantKey } from "./tenant-client.ts";
import { HttpRefusal, WsClient, wsUrl } from "./ws-client.ts";

/**
 * `GET /v1/leases/{uuid}/logs?follow=true` on real processes: the devnet, one mock
 * backend (its workloads write lines when a test asks, through `/_mock/log`) and
 * providerd. The stream starts with the tail, carries lines written after subscribing,
 * keeps going across a restart (with an instance frame), and closes with 4000 when the
 * lease is closed; every refusal is a plain HTTP answer before the upgrade.
 */
const stack = new Stack();
const ACTIVE = "LEASE_STATE_ACTIVE";
let tenant: TenantKey;
let other: TenantKey;

before(async () => {
  await stack.start(
    (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_LOG_INTERVAL: "0s" }],
    (s) => {
      tenant = new TenantKey(s.account("tenant1").private_key_hex);
      other = new TenantKey(s.account("tenant2").private_key_hex);
      s.extraConfig = { token_tracker_db_path: `${s.dir}/tokens.db` };
    },
  );
  await stack.startProviderd();
});

after(() => stack.close());

async function activeLease(): Promise<string> {
  const [lease] = await stack.createLeases(1, "docker-small");
  await stack.waitState([lease!], ACTIVE);
  await until(async () => {
    const res = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease!));
    return res.body.state === ACTIVE && res.body.provision_status === "ready";
  }, "providerd reads the lease ACTIVE and ready");
  return lease!;
}

/** The mock's workload writes `line` (or `count` copies) now. */
async function write(lease: string, body: Record<string, unknown>): Promise<void> {
  const mock = signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!);
  const res = await mock.post(`/_mock/log/${lease}`, body);
  assert.equal(res.status, 200, res.text);
}

function follow(lease: string, query = "", token = tenant.access(lease)): WsClient {
  return new WsClient(wsUrl(stack.api, `/v1/leases/${lease}/logs?follow=true&token=${token}${query}`));
}

async function frameWhere(
  ws: WsClient,
  match: (f: Record<string, unknown>) => boolean,
  from = 1,
): Promise<{ frame: Record<string, unknown>; at: number }> {
  for (let n = from; ; n++) {
    const frame = await ws.frame(n);
    if (match(frame)) return { frame, at: n };
  }
}

async function refusal(ws: WsClient): Promise<number> {
  try {
    await ws.open();
  } catch (err) {
    if (err instanceof HttpRefusal) return err.status;
    throw err;
  }
  ws.close();
  return 101;
}

describe("logs?follow=true through providerd", () => {
  it("starts with the tail, then streams lines written after subscribing, across a restart, until the lease closes", async () => {
    const lease = await activeLease();
    await write(lease, { line: "before the stream" });
    const ws = await follow(lease, "&tail=2").open();
    try {
      // The tail: the container's start line and the line written before we subscribed.
      const first = await ws.frame(1);
      assert.deepEqual(Object.keys(first).sort(), ["instance", "line", "service", "stream", "ts"]);
      assert.deepEqual([first.service, first.instance, first.stream], ["app", 0, "stdout"]);
      assert.ok(!Number.isNaN(Date.parse(String(first.ts))), String(first.ts));
      assert.equal((await ws.frame(2)).line, "before the stream");

      await write(lease, { line: "after subscribing", stream: "stderr" });
      const live = await ws.frame(3);
      assert.deepEqual([live.line, live.stream], ["after subscribing", "stderr"]);

      // A restart through the tenant API: an instance frame, then the new container's lines.
      const restart = await call(stack.api, `/v1/leases/${lease}/restart`, tenant.fresh(lease), {
        method: "POST",
        headers: { "idempotency-key": crypto.randomUUID() },
      });
      assert.equal(restart.status, 202, restart.text);
      const changed = await frameWhere(ws, (f) => f.type === "instance", 4);
      assert.deepEqual(changed.frame, {
        ...changed.frame,
        type: "instance",
        service: "app",
        instance: 0,
        event: "restarted",
      });
      await write(lease, { line: "after the restart" });
      await frameWhere(ws, (f) => f.line === "after the restart", changed.at + 1);

      // The lease ends: the stream closes with 4000 once the workload is gone.
      await stack.tenant.closeLeases([lease], "done");
      const closed = await ws.closed;
      assert.equal(closed.code, LOG_CLOSE.leaseEnded, JSON.stringify(closed));
    } finally {
      ws.close();
    }
  });

  it("without an upgrade, follow=true is a 400 and the plain tail read is unchanged", async () => {
    const lease = await activeLease();
    const plain = await call(stack.api, `/v1/leases/${lease}/logs?tail=5`, tenant.access(lease));
    assert.equal(plain.status, 200);
    assert.deepEqual(Object.keys(plain.body).sort(), ["lease_uuid", "logs", "provider_uuid", "tenant"]);
    const noUpgrade = await call(stack.api, `/v1/leases/${lease}/logs?follow=true`, tenant.access(lease));
    assert.equal(noUpgrade.status, 400);
    assert.equal(noUpgrade.body.code, 400);
    assert.match(String(noUpgrade.body.error), /WebSocket/);
    const bad = await call(stack.api, `/v1/leases/${lease}/logs?follow=maybe`, tenant.access(lease));
    assert.deepEqual([bad.status, bad.body.error], [400, "follow must be true or false"]);
  });

  it("refuses before the upgrade: another tenant, a bad uuid, a bad tail, no token", async () => {
    const lease = await activeLease();
    assert.equal(await refusal(follow(lease, "", other.access(lease))), 403);
    assert.equal(
      await refusal(new WsClient(wsUrl(stack.api, `/v1/leases/not-a-uuid/logs?follow=true&token=x`))),
      400,
    );
    assert.equal(await refusal(follow(lease, "&tail=10001")), 400);
    assert.equal(await refusal(follow(lease, "&tail=-1")), 400);
    assert.equal(await refusal(follow(lease, "&tail=abc")), 400);
    assert.equal(await refusal(new WsClient(wsUrl(stack.api, `/v1/leases/${lease}/logs?follow=true`))), 401);
    // An upgrade without follow=true is not a stream either.
    assert.equal(
      await refusal(new WsClient(wsUrl(stack.api, `/v1/leases/${lease}/logs?token=${tenant.access(lease)}`))),
      400,
    );
  });

  it("caps the streams of one lease: past the cap the upgrade is refused 503, and a closed stream frees its slot", async () => {
    const lease = await activeLease();
    const open: WsClient[] = [];
    try {
      for (let i = 0; i < LOG_FOLLOW_LIMITS.perLease; i++) open.push(await follow(lease).open());
      assert.equal(await refusal(follow(lease)), 503);
      open.pop()?.ws.close(1000);
      await until(async () => (await refusal(follow(lease))) === 101, "a slot is free again");
    } finally {
      for (const ws of open) ws.close();
    }
  });

  it("a workload that floods: its lines past the byte rate are dropped and counted, the rest arrive", async () => {
    const lease = await activeLease();
    const ws = await follow(lease, "&tail=1").open();
    try {
      await ws.frame(1);
      // 4,000 lines of 1 KiB at once: 4 MiB, far past the 512 KiB burst.
      await write(lease, { line: "x".repeat(1020), count: 4000 });
      const { frame: dropped, at } = await frameWhere(ws, (f) => f.type === "dropped");
      await write(lease, { line: "marker" });
      await until(
        () => ws.frames.some((f) => f.line === "marker"),
        "the marker line arrives once the bucket refills",
        { timeoutMs: 30_000 },
      );
      const delivered = ws.frames.slice(1).filter((f) => String(f.line ?? "").startsWith("xxx"));
      const droppedLines = ws.frames
        .filter((f) => f.type === "dropped")
        .reduce((n, f) => n + Number(f.lines), 0);
      assert.equal(
        delivered.length + droppedLines,
        4000,
        `delivered ${delivered.length}, dropped ${droppedLines}`,
      );
      assert.ok(Number(dropped.lines) > 0 && Number(dropped.bytes) >= Number(dropped.lines) * 1020);
      // At most the burst plus what the rate refilled while they arrived (generously: 10 s).
      const budget = LOG_FOLLOW_LIMITS.burstBytes + 10 * LOG_FOLLOW_LIMITS.bytesPerSecond;
      assert.ok(delivered.length * 1020 <= budget, `${delivered.length} lines delivered`);
      assert.ok(at > 1);
    } finally {
      ws.close();
    }
  });

  it("fred lease logs --follow prints lines as they are written (no polling) and exits 0 when the lease ends", async () => {
    const lease = await activeLease();
    const args = ["lease", "logs", lease, "--follow", "--tail", "1", "--output", "json"];
    const flags = ["--from", "tenant1", "--home", join(stack.dir, "devnet"), "--rpc", stack.devnet.rpc];
    // Ready once the stream's first frame (the tail line) is printed.
    const cli = await launchFred<Record<string, unknown>>([...args, ...flags, "--provider-url", stack.api], {
      label: "fred lease logs --follow",
    });
    try {
      assert.equal(cli.ready.line, "mock app/0 started");
      await write(lease, { line: "seen by the CLI" });
      await until(() => cli.stdout().includes('"line":"seen by the CLI"'), "the CLI printed the new line", {
        context: () => cli.logTail(),
      });
      const printed = cli
        .stdout()
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.deepEqual(printed.at(-1), { ...printed.at(-1), service: "app", instance: 0, stream: "stdout" });
      await stack.tenant.closeLeases([lease], "done");
      const exit = await cli.waitExit(30_000);
      assert.equal(exit.code, 0, cli.logTail());
      assert.match(cli.stderr(), /log stream ended/);
    } finally {
      await cli.kill();
    }
  });
});
