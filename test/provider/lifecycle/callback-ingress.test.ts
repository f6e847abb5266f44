import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import Fastify, { type FastifyInstance } from "fastify";
import pino from "pino";
import { hmacSecret, signRequest } from "../../../src/auth/hmac.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { FredError } from "../../../src/core/errors.ts";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import { CALLBACK_PATH, registerCallbackIngress } from "../../../src/provider/callbacks/ingress.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import type { ApplyResult, VerifiedCallback } from "../../../src/provider/lifecycle/index.ts";
import { baseConfig, SECRET_1, yamlOf } from "../config/fixtures.ts";

/**
 * The callback edge maps what application says to HTTP: ERR_NOT_READY (providerd starting
 * or stopping) is 503 "not available", an application past its budget on the clock 503
 * "timed out" (ERR_CALLBACK_APPLY_TIMEOUT in the log), any other failure 503 "failed", an
 * applied callback 200. A real HTTP listener on 127.0.0.1:0, signed requests.
 */
const SID = "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
let app: FastifyInstance;
let url: string;
let apply: (cb: VerifiedCallback) => Promise<ApplyResult>;
const outcomes: string[] = [];
// Starts at the real time so the signatures' timestamps verify; moves only when told to.
const clock = new ManualClock(Date.now());
const BUDGET_MS = 5_000;
const logged: { msg: string; err?: { code?: string } }[] = [];
const logger = pino({ level: "warn" }, { write: (line: string) => logged.push(JSON.parse(line)) });

before(async () => {
  const config = parseProviderConfig(yamlOf(baseConfig()));
  app = Fastify();
  registerCallbackIngress(app, {
    backends: config.backends,
    pins: new Map([["one", SID]]),
    legacySecret: config.callbackSecret,
    canonicalPathPrefix: config.callbackCanonicalPathPrefix,
    clock,
    logger,
    lifecycle: { applyCallback: (cb) => apply(cb) },
    observe: (o) => outcomes.push(o),
    applyBudgetMs: BUDGET_MS,
  });
  url = await app.listen({ host: "127.0.0.1", port: 0 });
});

after(async () => {
  await app.close();
});

async function post(): Promise<{ status: number; body: unknown }> {
  const uri = `${CALLBACK_PATH}?operation_id=${newUuidV4()}`;
  const body = JSON.stringify({ lease_uuid: LEASE, status: "success", error: "", backend_storage_id: SID });
  const signature = signRequest(hmacSecret(SECRET_1), {
    method: "POST",
    uri,
    body,
    timestamp: Math.floor(Date.now() / 1000),
  });
  const res = await fetch(`${url}${uri}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-fred-signature": signature },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

describe("callback ingress: application outcomes at the edge", () => {
  it("ERR_NOT_READY from application is 503 'not available'; the backend keeps the callback", async () => {
    apply = async () => {
      throw new FredError("ERR_NOT_READY", "providerd is starting; callbacks are not applied now");
    };
    assert.deepEqual(await post(), {
      status: 503,
      body: { error: "callback application is not available", code: 503 },
    });
    assert.equal(outcomes.at(-1), "unavailable");
  });

  it("an application still running when the budget passes on the clock is 503 'timed out', logged as ERR_CALLBACK_APPLY_TIMEOUT", async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    apply = () => {
      started();
      return new Promise<never>(() => {});
    };
    let answered = false;
    const answer = post().finally(() => {
      answered = true;
    });
    await running;
    clock.advance(BUDGET_MS - 1);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(answered, false, "no answer 1 ms before the budget ends");
    clock.advance(1);
    assert.deepEqual(await answer, {
      status: 503,
      body: { error: "callback application timed out", code: 503 },
    });
    assert.equal(outcomes.at(-1), "timeout");
    assert.equal(logged.at(-1)?.err?.code, "ERR_CALLBACK_APPLY_TIMEOUT");
  });

  it("any other failure is 503 'failed' with no internal text; an applied callback is 200", async () => {
    apply = async () => {
      throw new Error("SQLITE_BUSY: database is locked");
    };
    assert.deepEqual(await post(), {
      status: 503,
      body: { error: "callback application failed", code: 503 },
    });
    assert.equal(outcomes.at(-1), "error");
    const seen: VerifiedCallback[] = [];
    apply = async (cb) => {
      seen.push(cb);
      return "acknowledging";
    };
    assert.deepEqual(await post(), { status: 200, body: undefined });
    assert.deepEqual(
      seen.map((c) => [c.backend, c.leaseUuid, c.status]),
      [["one", LEASE, "success"]],
    );
    assert.equal(outcomes.at(-1), "acknowledging");
  });
});
