import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  boundDiagnosticLogs,
  CUT_MARKER,
  DIAGNOSTIC_LEASE_BYTES,
  DIAGNOSTIC_LOG_BYTES,
  DIAGNOSTIC_LOG_LINES,
  DROPPED_MARKER,
  tailDiagnosticLogs,
} from "../../../src/backend/kit/diagnostics.ts";
import type { EngineEvent } from "../../../src/backend/kit/engine.ts";
import { startBackend } from "../../../src/backend/kit/index.ts";
import { type AdmitInput, Journal } from "../../../src/backend/kit/journal/journal.ts";
import { loadMockBackendConfig } from "../../../src/backend/mock/config.ts";
import { startMockBackend } from "../../../src/backend/mock/main.ts";
import { MockSubstrate } from "../../../src/backend/mock/substrate.ts";
import { ManualClock, systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { until } from "../../support/index.ts";
import { SECRET, SKU } from "../mock/helpers.ts";
import { signedClient } from "./signed-client.ts";

/**
 * Persisted failure diagnostics: a lease's last failure (reason, curated message, logs
 * captured before its workload was removed) stays readable through GET /provisions/{uuid}
 * and GET /logs/{uuid} after the close, bounded in size, until diagnostics_max_age.
 */
const dir = mkdtempSync(join(tmpdir(), "fred-diagnostics-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const silent = createLogger("diagnostics-test", process.env.TEST_LOG_LEVEL ?? "silent");

const bytes = (s: string) => Buffer.byteLength(s);

describe("diagnostic log bounds", () => {
  it("keeps the last 100 lines, then the newest 64 KiB, of each instance", () => {
    const many = Array.from({ length: 250 }, (_, i) => `line ${i}`).join("\n") + "\n";
    const kept = boundDiagnosticLogs({ "app/0": many })["app/0"] ?? "";
    assert.equal(kept.split("\n").length - 1, DIAGNOSTIC_LOG_LINES);
    assert.ok(kept.startsWith("line 150\n") && kept.endsWith("line 249\n"));

    const long = `${"é".repeat(40_000)}\nlast\n`; // two-byte characters: cuts must not split one
    const cut = boundDiagnosticLogs({ "app/0": long })["app/0"] ?? "";
    assert.ok(bytes(cut) <= DIAGNOSTIC_LOG_BYTES, `${bytes(cut)} bytes`);
    assert.ok(cut.startsWith(CUT_MARKER));
    assert.ok(cut.endsWith("é\nlast\n"));
    assert.doesNotMatch(cut, /\uFFFD/);
  });

  it("spends one per-lease budget over instances in key order, then marks the rest", () => {
    const chunk = `${"x".repeat(1000)}\n`.repeat(90); // 90 lines, ~90 KiB: cut to 64 KiB each
    const logs: Record<string, string> = {};
    for (let i = 0; i < 30; i++) logs[`web/${String(i).padStart(2, "0")}`] = chunk;
    const out = boundDiagnosticLogs(logs);
    const total = Object.values(out).reduce((n, t) => n + bytes(t), 0);
    assert.ok(total <= DIAGNOSTIC_LEASE_BYTES + 30 * bytes(DROPPED_MARKER), `${total} bytes`);
    assert.equal(Object.keys(out).length, 30, "every instance keeps its key");
    assert.equal(out["web/29"], DROPPED_MARKER);
    assert.ok(bytes(out["web/00"] ?? "") <= DIAGNOSTIC_LOG_BYTES);
    assert.deepEqual(tailDiagnosticLogs({ a: "1\n2\n3\n" }, 2), { a: "2\n3\n" });
    assert.deepEqual(tailDiagnosticLogs({ a: "1\n2\n3\n" }, 0), { a: "" });
  });
});

describe("diagnostics in the journal", () => {
  const path = join(dir, "journal.db");
  const storageId = randomUUID();
  const open = () => new Journal({ path, mode: "bind-or-verify", storageId, backendName: "b" });
  const input = (lease: string, nowMs: number): AdmitInput => {
    const op = randomUUID();
    return {
      leaseUuid: lease,
      tenant: "manifest1tenant",
      providerUuid: "01234567-89ab-7def-8123-456789abcdef",
      operationId: op,
      callbackUrl: `http://h/cb?operation_id=${op}`,
      lifecycleUrl: `http://h/cb?lifecycle_id=${op}`,
      items: [{ sku: SKU, quantity: 1 }],
      instances: [],
      payload: undefined,
      payloadHash: undefined,
      image: "",
      requestDigest: "digest",
      nowMs,
    };
  };
  const fail = { reason: "ContainerExited", message: "service app instance 0 exited unexpectedly" };

  it("records a failure with its settlement, forgets it on success, keeps it past a close and a restart", async () => {
    const lease = randomUUID();
    let j = open();
    const a = j.admitOperation(input(lease, 10));
    const s = j.markStarted(lease, a.generation, a);
    assert.ok(s);
    assert.ok(j.settleFailure(lease, s.generation, fail, 20, { "app/0": "boom\n" }));
    assert.deepEqual(j.diagnostics.get(lease), {
      leaseUuid: lease,
      tenant: "manifest1tenant",
      providerUuid: "01234567-89ab-7def-8123-456789abcdef",
      ...fail,
      failCount: 1,
      logs: { "app/0": "boom\n" },
      createdAtMs: 20,
    });

    // A re-provision that succeeds: the lease is no longer failing.
    const b = j.admitOperation(input(lease, 30));
    const bs = j.markStarted(lease, b.generation, b);
    assert.ok(bs && j.settleSuccess(lease, bs.generation, 40));
    assert.equal(j.diagnostics.get(lease), undefined);

    // A runtime death: recorded without logs; logs attach once, to that failure only.
    assert.ok(j.recordRuntimeFailure(lease, undefined, fail, 50));
    assert.equal(j.diagnostics.get(lease)?.logs, undefined);
    assert.equal(j.diagnostics.get(lease)?.failCount, 2);
    assert.equal(j.diagnostics.attachLogs(lease, 49, { "app/0": "other\n" }), false);
    assert.equal(j.diagnostics.attachLogs(lease, 50, { "app/0": "died\n" }), true);
    assert.equal(j.diagnostics.attachLogs(lease, 50, { "app/0": "again\n" }), false);

    const closing = j.beginClose(lease, 60);
    assert.equal(closing.kind, "closing");
    const gen = j.getLease(lease)?.generation ?? -1;
    assert.ok(j.completeClose(lease, gen, 70));
    assert.equal(j.getLease(lease), undefined);
    await j.durable();
    j.close();

    j = open();
    try {
      assert.deepEqual(j.diagnostics.get(lease)?.logs, { "app/0": "died\n" });
      assert.equal(j.diagnostics.expire(50), 0, "not older than the cutoff");
      assert.equal(j.diagnostics.expire(51), 1);
      assert.equal(j.diagnostics.get(lease), undefined);
    } finally {
      j.close();
    }
  });
});

const once = (
  b: { engine: { on(l: (e: EngineEvent, lease?: string) => void): () => void } },
  event: EngineEvent,
  lease: string,
) =>
  new Promise<void>((resolve) => {
    const off = b.engine.on((e, l) => {
      if (e === event && l === lease) {
        off();
        resolve();
      }
    });
  });

describe("diagnostics over the contract (mock backend, manual clock)", () => {
  it("serves the last failure and its logs after the close, until diagnostics_max_age", async () => {
    const clock = new ManualClock(Date.now());
    const lease = randomUUID();
    const config = loadMockBackendConfig({
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_STORAGE_ID: randomUUID(),
      MOCK_BACKEND_CALLBACK_SECRET: SECRET,
      MOCK_BACKEND_FAIL_LEASES: lease,
      MOCK_BACKEND_DIAGNOSTICS_MAX_AGE: "1h",
    });
    const b = await startMockBackend(config, { logger: silent, clock });
    try {
      const c = signedClient(b.url, SECRET, () => clock.now());
      const op = randomUUID();
      const settled = once(b, "operation:settled", lease);
      const res = await c.post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1diag",
        provider_uuid: randomUUID(),
        items: [{ sku: SKU, quantity: 2 }],
        callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${op}`,
      });
      assert.equal(res.status, 202, res.text);
      await settled;
      const live = (await c.get(`/provisions/${lease}`)).json as Record<string, unknown>;
      assert.equal(live.status, "failed");
      assert.ok("items" in live, "a live lease answers from its lease row");

      const closed = once(b, "close:done", lease);
      assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
      await closed;
      assert.equal(b.journal.getLease(lease), undefined);

      const p = await c.get(`/provisions/${lease}`);
      assert.equal(p.status, 200, p.text);
      const body = p.json as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), [
        "created_at",
        "fail_count",
        "lease_uuid",
        "message",
        "provider_uuid",
        "reason",
        "status",
        "tenant",
      ]);
      assert.equal(body.status, "failed");
      assert.equal(body.reason, "ContainerExited");
      assert.equal(body.message, "workload exited during startup");
      assert.equal(body.fail_count, 1);
      assert.doesNotMatch(p.text, /mock failure injected/, "operator detail never served");

      const logs = await c.get(`/logs/${lease}`);
      assert.equal(logs.status, 200, logs.text);
      assert.deepEqual(logs.json, {
        "app/0": "mock app/0 started\nstate failed\n",
        "app/1": "mock app/1 started\nstate failed\n",
      });
      assert.deepEqual((await c.get(`/logs/${lease}?tail=1`)).json, {
        "app/0": "state failed\n",
        "app/1": "state failed\n",
      });
      assert.equal((await c.get(`/logs/${lease}?tail=x`)).status, 400);
      assert.equal((await c.get(`/provisions/${randomUUID()}`)).status, 404);
      assert.equal((await c.get(`/logs/${randomUUID()}`)).status, 404);
      assert.deepEqual(
        ((await c.get("/provisions")).json as { provisions: unknown[] }).provisions,
        [],
        "a diagnostic is not inventory",
      );

      // Past the maximum age: gone at once for readers, and deleted by the next tick.
      clock.advance(3_600_000 + 1);
      assert.equal((await c.get(`/provisions/${lease}`)).status, 404);
      assert.equal((await c.get(`/logs/${lease}`)).status, 404);
      clock.advance(30_000);
      await until(() => b.journal.diagnostics.count() === 0, "the tick to delete the expired diagnostic");
    } finally {
      await b.close();
    }
  });

  it("with MOCK_BACKEND_DIAGNOSTICS_MAX_AGE=0 a failure never expires", async () => {
    const clock = new ManualClock(Date.now());
    const lease = randomUUID();
    const config = loadMockBackendConfig({
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_STORAGE_ID: randomUUID(),
      MOCK_BACKEND_CALLBACK_SECRET: SECRET,
      MOCK_BACKEND_FAIL_LEASES: lease,
      MOCK_BACKEND_DIAGNOSTICS_MAX_AGE: "0s",
    });
    assert.equal(config.diagnosticsMaxAgeMs, 0);
    const b = await startMockBackend(config, { logger: silent, clock });
    try {
      const c = signedClient(b.url, SECRET, () => clock.now());
      const op = randomUUID();
      const settled = once(b, "operation:settled", lease);
      const res = await c.post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1forever",
        provider_uuid: randomUUID(),
        items: [{ sku: SKU, quantity: 1 }],
        callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${op}`,
      });
      assert.equal(res.status, 202, res.text);
      await settled;
      const closed = once(b, "close:done", lease);
      assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
      await closed;

      // A month on (four times the default maximum age), then past a recovery tick: a tick
      // runs its expiry step right before its recovery pass, so once a recovery pass is
      // done, the expiry has had its chance.
      clock.advance(30 * 24 * 3_600_000);
      let recovered = false;
      const off = b.engine.on((e) => {
        if (e === "recovery:done") recovered = true;
      });
      await until(() => {
        clock.advance(5 * 60_000);
        return recovered;
      }, "a recovery tick a month on");
      off();
      assert.equal(b.journal.diagnostics.count(), 1, "the tick deleted nothing");
      const p = await c.get(`/provisions/${lease}`);
      assert.equal(p.status, 200, p.text);
      assert.equal((p.json as Record<string, unknown>).reason, "ContainerExited");
      const logs = await c.get(`/logs/${lease}`);
      assert.equal(logs.status, 200, logs.text);
      assert.deepEqual(logs.json, { "app/0": "mock app/0 started\nstate failed\n" });
    } finally {
      await b.close();
    }
  });
});

/** A mock workload whose instances print far more than a diagnostic keeps. */
class ChattySubstrate extends MockSubstrate {
  override async logs(leaseUuid: string, tail: number): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const key of Object.keys(await super.logs(leaseUuid, tail))) {
      const lines = Array.from({ length: tail }, (_, i) => `${key} ${i} ${"y".repeat(2000)}`);
      out[key] = `${lines.join("\n")}\n`;
    }
    return out;
  }
}

describe("diagnostics are bounded in size (kit over a chatty substrate)", () => {
  it("keeps at most 100 lines and 64 KiB per instance", async () => {
    const lease = randomUUID();
    const b = await startBackend({
      name: "chatty",
      substrate: new ChattySubstrate({
        clock: systemClock,
        backendName: "chatty",
        delayMs: 0,
        failRate: 0,
        failLeases: new Set([lease]),
        hangLeases: new Set(),
      }),
      journal: { path: join(dir, "chatty.db"), mode: "bind-or-verify", storageId: randomUUID() },
      logger: silent,
      secret: SECRET,
      listen: { host: "127.0.0.1", port: 0 },
      resolveSku: () => ({ cpu_cores: 0.1, memory_mb: 64, disk_mb: 0 }),
      pool: { totals: { cpuCores: 8, memoryMb: 8192, diskMb: 0 } },
    });
    try {
      const c = signedClient(b.url, SECRET);
      const settled = once(b, "operation:settled", lease);
      const op = randomUUID();
      const res = await c.post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1chatty",
        provider_uuid: randomUUID(),
        items: [{ sku: SKU, quantity: 3 }],
        callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${op}`,
      });
      assert.equal(res.status, 202, res.text);
      await settled;
      const closed = once(b, "close:done", lease);
      assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
      await closed;
      const logs = (await c.get(`/logs/${lease}?tail=10000`)).json as Record<string, string>;
      assert.deepEqual(Object.keys(logs).sort(), ["app/0", "app/1", "app/2"]);
      for (const text of Object.values(logs)) {
        assert.ok(bytes(text) <= DIAGNOSTIC_LOG_BYTES, `${bytes(text)} bytes`);
        assert.ok(text.split("\n").length - 1 <= DIAGNOSTIC_LOG_LINES);
        assert.ok(text.startsWith(CUT_MARKER));
        assert.match(text, /app\/\d 99 y+\n$/, "the newest line is kept");
      }
    } finally {
      await b.close();
    }
  });
});
