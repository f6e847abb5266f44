import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import WebSocket from "ws";
import { LOG_FOLLOW_LIMITS } from "../../../src/provider/api/log-follows.ts";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { until } from "../../support/index.ts";
import { mockSkus, SECRETS, Stack } from "../e2e/stack.ts";
import { call, TenantKey } from "./tenant-client.ts";
import { WsClient, wsUrl } from "./ws-client.ts";

/**
 * `logs?follow=true` against hostile peers, on real processes (devnet, two mock backends,
 * providerd): a tenant that stops reading while its workload floods is cut off (the
 * connection dropped without a close frame, as docs/tenant-api.md says) and its stream's
 * slot is freed; a backend that accepts the streaming read and never answers (mock-2,
 * MOCK_BACKEND_HANG_LOG_FOLLOW) costs the tenant a 503 within the backend's `timeout`
 * (2 s here, through the providerd option), and the slot each such attempt held is freed.
 */
const stack = new Stack();
const ACTIVE = "LEASE_STATE_ACTIVE";
const BACKEND_TIMEOUT_MS = 2_000;
let tenant: TenantKey;

before(async () => {
  await stack.start(
    (s): Record<string, string>[] => [
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_LOG_INTERVAL: "0s" },
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-medium")),
        MOCK_BACKEND_LOG_INTERVAL: "0s",
        MOCK_BACKEND_HANG_LOG_FOLLOW: "1",
      },
    ],
    (s) => {
      tenant = new TenantKey(s.account("tenant1").private_key_hex);
      s.backendOverrides = [
        { skus: [s.sku("docker-small")] },
        { skus: [s.sku("docker-medium")], timeout: `${BACKEND_TIMEOUT_MS / 1000}s` },
      ];
    },
  );
  await stack.startProviderd();
});

after(() => stack.close());

async function activeLease(sku: string): Promise<string> {
  const [lease] = await stack.createLeases(1, sku);
  await stack.waitState([lease!], ACTIVE);
  await until(async () => {
    const res = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease!));
    return res.body.state === ACTIVE && res.body.provision_status === "ready";
  }, "providerd reads the lease ACTIVE and ready");
  return lease!;
}

function followUrl(lease: string, query = ""): string {
  return wsUrl(stack.api, `/v1/leases/${lease}/logs?follow=true&token=${tenant.access(lease)}${query}`);
}

/** Opens a stream, or answers the HTTP refusal (status and envelope) when it is refused. */
async function attempt(lease: string): Promise<{ status: number; body?: Record<string, unknown> }> {
  const ws = new WebSocket(followUrl(lease, "&tail=0"));
  ws.on("error", () => {});
  return new Promise((resolve, reject) => {
    ws.once("open", () => {
      ws.terminate();
      resolve({ status: 101 });
    });
    ws.once("unexpected-response", (_req, res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => {
        text += String(chunk);
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    ws.once("error", reject);
  });
}

describe("logs?follow=true against hostile peers", () => {
  it("a client that stops reading while the workload floods is cut off, and its slot is freed", async () => {
    const lease = await activeLease("docker-small");
    const mock = signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!);
    const slow = await new WsClient(followUrl(lease, "&tail=1")).open();
    const others: WsClient[] = [];
    try {
      await slow.frame(1);
      // The slow client stops reading: nothing more leaves its socket's receive buffer.
      const socket = (slow.ws as unknown as { _socket: import("node:net").Socket })._socket;
      socket.pause();
      // The other slots of the lease are taken by clients that read, so the cap tells
      // whether the slow client's slot is still held.
      for (let i = 1; i < LOG_FOLLOW_LIMITS.perLease; i++)
        others.push(await new WsClient(followUrl(lease, "&tail=0")).open());
      assert.equal((await attempt(lease)).status, 503, "the lease's streams are at the cap");

      // Flood on both streams (each has its own byte rate) until providerd lets the slow client go.
      const line = "y".repeat(1020);
      let floods = 0;
      await until(
        async () => {
          for (const stream of ["stdout", "stderr"]) {
            const res = await mock.post(`/_mock/log/${lease}`, { line, stream, count: 500 });
            assert.equal(res.status, 200, res.text);
          }
          floods++;
          return (await attempt(lease)).status === 101;
        },
        "providerd cuts the client that stopped reading, freeing its slot",
        // Before the missed pongs would cut it (that is another bound): this one is the buffer's.
        { timeoutMs: LOG_FOLLOW_LIMITS.pongTimeoutMs - 10_000, intervalMs: 100 },
      );
      // Once it reads again it finds the connection dropped: no close frame (1006).
      socket.resume();
      const closed = await slow.closed;
      assert.equal(closed.code, 1006, JSON.stringify(closed));
      // What it was sent before the cut is bounded by the byte rate, not by what was written.
      const received = slow.frames.filter((f) => typeof f.line === "string").length;
      assert.ok(received < floods * 1000, `${received} lines received of ${floods * 1000} written`);
      // The clients that kept reading are still streaming.
      for (const o of others) assert.equal(o.ws.readyState, WebSocket.OPEN);
    } finally {
      slow.close();
      for (const o of others) o.close();
    }
  });

  it("a backend that never answers the streaming read: 503 within its timeout, and no slot is kept", {
    timeout: 120_000,
  }, async () => {
    const lease = await activeLease("docker-medium");
    // The plain tail read of the same backend still answers: only the stream hangs.
    assert.equal(
      (await call(stack.api, `/v1/leases/${lease}/logs?tail=1`, tenant.access(lease))).status,
      200,
    );
    // Every slot of the lease is taken by an attempt the backend holds...
    const started = Date.now();
    const hung = Array.from({ length: LOG_FOLLOW_LIMITS.perLease }, () => attempt(lease));
    await until(async () => {
      const extra = await attempt(lease);
      if (extra.status !== 503) return false;
      return extra.body?.error === "too many log streams are open; retry shortly";
    }, "the hung attempts hold the lease's slots");
    // ...until providerd gives up on the backend: each gets the documented 503.
    for (const res of await Promise.all(hung)) {
      assert.equal(res.status, 503);
      assert.deepEqual(res.body, { error: "service temporarily unavailable", code: 503 });
    }
    // Well within the backend's timeout plus scheduling slack, far below the 45 s stream idle limit.
    const waited = Date.now() - started;
    assert.ok(waited >= BACKEND_TIMEOUT_MS - 100 && waited < 40_000, `${waited} ms`);
    // Nothing was kept: the next attempt is not refused for a full lease, but times out in turn.
    const again = await attempt(lease);
    assert.deepEqual([again.status, again.body?.error], [503, "service temporarily unavailable"]);
  });
});
