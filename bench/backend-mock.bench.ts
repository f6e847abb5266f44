/**
 * Mock backend throughput on the real kit, against a real `fred backend mock` process
 * with a SQLite journal file (durable intents, synchronous=FULL):
 *  1. provisions accepted per second (202s from concurrent signed POSTs);
 *  2. callbacks delivered per second to a local receiver, draining a journal that was
 *     filled with settled results beforehand (pure outbox delivery rate).
 * Prints one JSON line per figure.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { hmacSecret, signRequest } from "../src/auth/hmac.ts";
import { Journal } from "../src/backend/kit/journal/journal.ts";
import { parseProvisionRequest } from "../src/backend/kit/server.ts";
import { loadMockBackendConfig } from "../src/backend/mock/config.ts";
import { startMockBackend } from "../src/backend/mock/main.ts";
import { createLogger } from "../src/log.ts";
import { startReceiver } from "../test/backend/kit/receiver.ts";
import { spawnMock } from "../test/backend/mock/process.ts";

const SECRET = "bench-secret-0123456789abcdef0123456789";
const SKU = "0190f3a2-7c1e-7000-8000-00000000a001";
const PROVISIONS = Number(process.env.BENCH_PROVISIONS ?? 3000);
const CALLBACKS = Number(process.env.BENCH_CALLBACKS ?? 5000);
const CONCURRENCY = 64;
const key = hmacSecret(SECRET);
const dir = mkdtempSync(join(tmpdir(), "fred-bench-mock-"));
const capacity = JSON.stringify({ cpu_cores: 100_000, memory_mb: 100_000_000, disk_mb: 100_000_000 });

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function provisionsAccepted(): Promise<void> {
  const rx = await startReceiver(SECRET);
  const env = {
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    MOCK_BACKEND_DB_PATH: join(dir, "provisions.db"),
    MOCK_BACKEND_CAPACITY: capacity,
  };
  const mock = await spawnMock(env);
  const dispatcher = new Agent({ connections: 16, pipelining: 1 });
  try {
    const send = async () => {
      const op = randomUUID();
      const body = JSON.stringify({
        lease_uuid: randomUUID(),
        tenant: "manifest1bench",
        provider_uuid: randomUUID(),
        items: [{ sku: SKU, quantity: 1 }],
        callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
      });
      const signature = signRequest(key, {
        method: "POST",
        uri: "/provision",
        body,
        timestamp: Math.floor(Date.now() / 1000),
      });
      const res = await request(`${mock.ready.url}/provision`, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", "x-fred-signature": signature },
        dispatcher,
      });
      await res.body.dump();
      if (res.statusCode !== 202) throw new Error(`provision answered ${res.statusCode}`);
    };
    for (let i = 0; i < 50; i++) await send(); // warm-up
    let next = 0;
    const cpuBefore = cpuSeconds(mock.pid);
    const start = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < PROVISIONS) await send();
      }),
    );
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const total = PROVISIONS + 50;
    await rx.waitFor((r) => r.effects.length >= total, 120_000);
    const allSeconds = Number(process.hrtime.bigint() - start) / 1e9;
    // Backend CPU per provision (admission, worker, settlement and callback delivery): the
    // figure that does not depend on how busy the shared machine is.
    const cpuMs = ((cpuSeconds(mock.pid) - cpuBefore) * 1000) / PROVISIONS;
    console.log(
      JSON.stringify({
        bench: "mock_provisions_accepted",
        provisions: PROVISIONS,
        concurrency: CONCURRENCY,
        accepted_per_s: Math.round(PROVISIONS / seconds),
        goal_per_s: 1000,
        all_callbacks_received_s: Number(allSeconds.toFixed(2)),
        backend_cpu_ms_per_provision: Number(cpuMs.toFixed(3)),
        load_average_1m: Number(loadavg()[0]?.toFixed(2)),
      }),
    );
  } finally {
    await dispatcher.close();
    await mock.stop();
    await rx.close();
  }
}

async function callbacksDelivered(): Promise<void> {
  const rx = await startReceiver(SECRET);
  const storageId = randomUUID();
  const dbPath = join(dir, "callbacks.db");
  // Fill the journal with settled results while no backend runs.
  const journal = new Journal({
    path: dbPath,
    mode: "bind-or-verify",
    storageId,
    backendName: "mock-backend",
  });
  journal.db.transaction(() => {
    for (let i = 0; i < CALLBACKS; i++) {
      const lease = randomUUID();
      const op = randomUUID();
      const a = journal.admitOperation({
        leaseUuid: lease,
        tenant: "manifest1bench",
        providerUuid: randomUUID(),
        operationId: op,
        callbackUrl: `${rx.url}/callbacks/provision?operation_id=${op}`,
        lifecycleUrl: `${rx.url}/callbacks/provision?lifecycle_id=${op}`,
        items: [{ sku: SKU, quantity: 1 }],
        instances: [],
        payload: undefined,
        payloadHash: undefined,
        image: "",
        requestDigest: "bench",
        nowMs: Date.now(),
      });
      const s = journal.markStarted(lease, a.generation);
      if (!s) throw new Error("could not start");
      journal.settleFailure(lease, s.generation, { reason: "Bench", message: "bench" }, Date.now());
    }
  })();
  journal.close();
  const start = process.hrtime.bigint();
  const mock = await spawnMock({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: storageId,
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    MOCK_BACKEND_DB_PATH: dbPath,
    MOCK_BACKEND_CAPACITY: capacity,
  });
  try {
    await rx.waitFor((r) => r.effects.length >= 1, 120_000);
    const firstAt = process.hrtime.bigint();
    const cpuBefore = cpuSeconds(mock.pid);
    await rx.waitFor((r) => r.effects.length >= CALLBACKS, 120_000);
    const end = process.hrtime.bigint();
    const drainSeconds = Number(end - firstAt) / 1e9;
    console.log(
      JSON.stringify({
        bench: "mock_callbacks_delivered",
        callbacks: CALLBACKS,
        delivered_per_s: Math.round((CALLBACKS - 1) / drainSeconds),
        goal_per_s: 2000,
        including_startup_per_s: Math.round(CALLBACKS / (Number(end - start) / 1e9)),
        backend_cpu_ms_per_callback: Number(
          (((cpuSeconds(mock.pid) - cpuBefore) * 1000) / CALLBACKS).toFixed(3),
        ),
        load_average_1m: Number(loadavg()[0]?.toFixed(2)),
      }),
    );
  } finally {
    await mock.stop();
    await rx.close();
  }
}

/**
 * The same admission path without HTTP: engine.provision() in-process on a journal file
 * (durable intents, group commit), workers and settlement running alongside. Shows what
 * the kit itself sustains apart from the HTTP layers and the load generator.
 */
async function kitAdmissions(): Promise<void> {
  const config = loadMockBackendConfig({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    MOCK_BACKEND_DB_PATH: join(dir, "kit.db"),
    MOCK_BACKEND_CAPACITY: capacity,
  });
  const b = await startMockBackend(config, { logger: createLogger("bench", "silent") });
  try {
    const one = () => {
      const op = randomUUID();
      return b.engine.provision(
        parseProvisionRequest({
          lease_uuid: randomUUID(),
          tenant: "manifest1bench",
          provider_uuid: randomUUID(),
          items: [{ sku: SKU, quantity: 1 }],
          callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${op}`,
        }),
      );
    };
    let next = 0;
    const start = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < PROVISIONS) await one();
      }),
    );
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    console.log(
      JSON.stringify({
        bench: "kit_admissions_in_process",
        provisions: PROVISIONS,
        accepted_per_s: Math.round(PROVISIONS / seconds),
        goal_per_s: 1000,
        load_average_1m: Number(loadavg()[0]?.toFixed(2)),
      }),
    );
  } finally {
    await b.close();
  }
}

try {
  await kitAdmissions();
  await provisionsAccepted();
  await callbacksDelivered();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
