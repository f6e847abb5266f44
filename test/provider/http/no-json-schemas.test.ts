import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import Fastify from "fastify";
import { NO_JSON_SCHEMAS } from "../../../src/provider/http/no-json-schemas.ts";

/**
 * providerd's listeners run without Fastify's JSON schema compilers (Ajv,
 * fast-json-stringify): they are never loaded, and a route that declares a JSON schema is
 * refused rather than left unchecked. The tests run in order: the last one loads Ajv.
 */
const loadedAjv = () =>
  Object.keys(createRequire(import.meta.url).cache).some((f) => /\/node_modules\/ajv\//.test(f));

describe("providerd's listeners without JSON schema compilers", () => {
  it("serve their routes without loading Ajv", async () => {
    const app = Fastify({ logger: false, schemaController: NO_JSON_SCHEMAS });
    app.post("/echo", async (req) => ({ got: req.body }));
    const res = await app.inject({ method: "POST", url: "/echo", payload: { a: 1 } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { got: { a: 1 } });
    await app.close();
    assert.equal(loadedAjv(), false);
  });

  it("refuse a route that declares a JSON schema", async () => {
    const app = Fastify({ logger: false, schemaController: NO_JSON_SCHEMAS });
    app.post("/typed", { schema: { body: { type: "object" } } }, async () => ({}));
    await assert.rejects(async () => app.ready(), /validate with zod/);
    await app.close().catch(() => {});
  });

  it("(the control) a default instance does load Ajv for a route with a schema", async () => {
    const app = Fastify({ logger: false });
    app.post("/typed", { schema: { body: { type: "object" } } }, async () => ({}));
    await app.ready();
    await app.close();
    assert.equal(loadedAjv(), true);
  });
});
