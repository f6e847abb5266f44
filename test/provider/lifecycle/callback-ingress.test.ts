import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import Fastify, { type FastifyInstance } from "fastify";
import { hmacSecret, signRequest } from "../../../src/auth/hmac.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { FredError } from "../../../src/core/errors.ts";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import { createLogger } from "../../../src/log.ts";
import { CALLBACK_PATH, registerCallbackIngress } from "../../../src/provider/callbacks/ingress.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import type { ApplyResult, VerifiedCallback } from "../../../src/provider/lifecycle/index.ts";
import { baseConfig, SECRET_1, yamlOf } from "../config/fixtures.ts";

/**
 * The callback edge maps what application says to HTTP: ERR_NOT_READY (providerd starting
 * or stopping) is 503 "not available", any other failure 503 "failed", an applied
 * callback 200. A real HTTP listener on 127.0.0.1:0, signed requests.
 */
const SID = "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
let app: FastifyInstance;
let url: string;
let apply: (cb: VerifiedCallback) => Promise<ApplyResult>;
const outcomes: string[] = [];

before(async () => {
  const config = parseProviderConfig(yamlOf(baseConfig()));
  app = Fastify();
  registerCallbackIngress(app, {
    backends: config.backends,
    pins: new Map([["one", SID]]),
    legacySecret: config.callbackSecret,
    canonicalPathPrefix: config.callbackCanonicalPathPrefix,
    clock: systemClock,
    logger: createLogger("test", "silent"),
    apply: (cb) => apply(cb),
    observe: (o) => outcomes.push(o),
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
