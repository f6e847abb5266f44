import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, it } from "node:test";
import pino from "pino";
import { startBackend } from "../../../src/backend/kit/index.ts";
import { MockSubstrate } from "../../../src/backend/mock/substrate.ts";
import { systemClock } from "../../../src/core/clock.ts";

/**
 * GET /health is unauthenticated: it reflects the substrate and the journal with a fixed
 * word, and the detail behind a 503 (engine or SQLite text) reaches only the log.
 */
const SECRET = "health-test-secret-0123456789abcdef0123456";
const ENGINE_TEXT = "engine socket /var/run/secret.sock: connection refused";

async function start(health: () => Promise<string | undefined>, journalPath = ":memory:") {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split("\n").filter(Boolean));
      done();
    },
  });
  const substrate = new MockSubstrate({
    clock: systemClock,
    backendName: "health-test",
    delayMs: 0,
    failRate: 0,
    failLeases: new Set(),
    hangLeases: new Set(),
  });
  Object.assign(substrate, { health: (_signal: AbortSignal) => health() });
  const running = await startBackend({
    name: "health-test",
    substrate,
    journal: { path: journalPath, mode: "bind-or-verify", storageId: randomUUID() },
    logger: pino({ level: "info" }, sink),
    secret: SECRET,
    listen: { host: "127.0.0.1", port: 0 },
    resolveSku: () => ({ cpu_cores: 1, memory_mb: 1, disk_mb: 0 }),
    pool: { totals: { cpuCores: 4, memoryMb: 4096, diskMb: 0 } },
  });
  const get = async () => {
    const res = await fetch(`${running.url}/health`);
    return { status: res.status, body: (await res.json()) as unknown };
  };
  return { running, get, lines };
}

describe("backend GET /health", () => {
  it("answers 503 with a fixed message while the substrate reports a problem; the detail is logged", async () => {
    let problem: string | undefined = ENGINE_TEXT;
    const b = await start(async () => problem);
    try {
      assert.deepEqual(await b.get(), {
        status: 503,
        body: { status: "unhealthy", error: "substrate unavailable" },
      });
      const logged = b.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const line = logged.find((l) => l.msg === "health check: unhealthy");
      assert.ok(line, "the health verdict is logged");
      assert.equal(line.part, "substrate");
      assert.equal((line.err as { message?: string }).message, ENGINE_TEXT);
      problem = undefined;
      assert.deepEqual(await b.get(), { status: 200, body: { status: "healthy" } });
    } finally {
      await b.running.close();
    }
  });

  it("a substrate health check that throws is unhealthy with the same fixed message", async () => {
    const b = await start(async () => {
      throw new Error(ENGINE_TEXT);
    });
    try {
      const res = await b.get();
      assert.deepEqual(res, { status: 503, body: { status: "unhealthy", error: "substrate unavailable" } });
      assert.doesNotMatch(JSON.stringify(res.body), /secret\.sock/);
    } finally {
      await b.running.close();
    }
  });

  it("a journal whose commit failed is unhealthy ('journal unavailable') and refuses writes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fred-health-"));
    const b = await start(async () => undefined, join(dir, "journal.db"));
    try {
      const { journal } = b.running;
      assert.deepEqual(await b.get(), { status: 200, body: { status: "healthy" } });
      // A deferred foreign key fails at COMMIT only, which is where a full disk fails too.
      journal.db.exec(
        "CREATE TABLE broken (x TEXT REFERENCES leases(lease_uuid) DEFERRABLE INITIALLY DEFERRED)",
      );
      journal.transaction(() => journal.db.prepare("INSERT INTO broken (x) VALUES ('no such lease')").run());
      await assert.rejects(journal.durable(), /commit failed/);
      const res = await b.get();
      assert.equal(res.status, 503);
      assert.deepEqual(res.body, { status: "unhealthy", error: "journal unavailable" });
      assert.doesNotMatch(JSON.stringify(res.body), /FOREIGN KEY|SQLITE/i);
      assert.throws(() => journal.resetFailureStreak(randomUUID()), /commit failed/);
    } finally {
      await b.running.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
