import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { describe, it } from "node:test";
import pino from "pino";
import { startBackend } from "../../../src/backend/kit/index.ts";
import { MockSubstrate } from "../../../src/backend/mock/substrate.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { SECRET, SKU } from "../mock/helpers.ts";
import { signedClient } from "./signed-client.ts";

/**
 * The contract server's waits on the substrate are deadlines on the backend's clock: a
 * substrate that never answers GET /logs/{uuid} makes it a bare 500 at 30 s (logged as
 * ERR_SUBSTRATE_TIMEOUT), and one that never gives a health verdict makes GET /health 503
 * at 3 s (ERR_SUBSTRATE_HEALTH_TIMEOUT). Nothing is answered a millisecond earlier.
 */
async function start() {
  // Starts at the real time so request signatures verify; moves only when told to.
  const clock = new ManualClock(Date.now());
  const lines: { msg: string; err?: { code?: string } }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  const substrate = new MockSubstrate({
    clock,
    backendName: "deadline-test",
    delayMs: 0,
    failRate: 0,
    failLeases: new Set(),
    hangLeases: new Set(),
  });
  const running = await startBackend({
    name: "deadline-test",
    substrate,
    clock,
    journal: { path: ":memory:", mode: "bind-or-verify", storageId: randomUUID() },
    logger: pino({ level: "warn" }, sink),
    secret: SECRET,
    listen: { host: "127.0.0.1", port: 0 },
    resolveSku: () => ({ cpu_cores: 1, memory_mb: 1, disk_mb: 0 }),
    pool: { totals: { cpuCores: 4, memoryMb: 4096, diskMb: 0 } },
  });
  return { clock, substrate, running, lines, client: signedClient(running.url, SECRET, () => clock.now()) };
}

/** Resolves when the returned hook is called: the substrate call has begun. */
function hangingCall() {
  let begun!: () => void;
  const started = new Promise<void>((r) => {
    begun = r;
  });
  const call = () => {
    begun();
    return new Promise<never>(() => {});
  };
  return { started, call };
}

describe("backend contract server: deadlines on substrate calls", () => {
  it("GET /logs/{uuid} on a substrate that never answers is a bare 500 at 30 s, logged as ERR_SUBSTRATE_TIMEOUT", async () => {
    const b = await start();
    try {
      const lease = randomUUID();
      const op = randomUUID();
      const admitted = await b.client.post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1deadline",
        provider_uuid: randomUUID(),
        items: [{ sku: SKU, quantity: 1 }],
        callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${op}`,
      });
      assert.equal(admitted.status, 202, admitted.text);
      const hang = hangingCall();
      Object.assign(b.substrate, { logs: hang.call });
      let answered = false;
      const answer = b.client.get(`/logs/${lease}`).finally(() => {
        answered = true;
      });
      await hang.started;
      b.clock.advance(29_999);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(answered, false, "still waiting 1 ms before the deadline");
      b.clock.advance(1);
      const res = await answer;
      assert.equal(res.status, 500);
      assert.deepEqual(res.json, { error: "internal error" });
      const line = b.lines.find((l) => l.msg === "request failed");
      assert.equal(line?.err?.code, "ERR_SUBSTRATE_TIMEOUT");
    } finally {
      await b.running.close();
    }
  });

  it("GET /health without a substrate verdict is 503 at 3 s, logged as ERR_SUBSTRATE_HEALTH_TIMEOUT", async () => {
    const b = await start();
    try {
      const hang = hangingCall();
      Object.assign(b.substrate, { health: hang.call });
      const answer = fetch(`${b.running.url}/health`);
      await hang.started;
      b.clock.advance(3_000);
      const res = await answer;
      assert.equal(res.status, 503);
      assert.deepEqual(await res.json(), { status: "unhealthy", error: "substrate unavailable" });
      const line = b.lines.find((l) => l.msg === "health check: unhealthy");
      assert.equal(line?.err?.code, "ERR_SUBSTRATE_HEALTH_TIMEOUT");
    } finally {
      await b.running.close();
    }
  });
});
