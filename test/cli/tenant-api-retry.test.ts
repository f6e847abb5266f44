/**
 * The tenant CLI's API client against a real HTTP server on 127.0.0.1 that answers 401 the
 * way providerd answers a spent token. Two fred processes that stamp a token for the same
 * lease with the same second mint the same token (second-resolution timestamps,
 * deterministic signatures), so the second finds it spent: a call that spends its token
 * tries again with tokens of other seconds, a few times. A read that spends nothing, and
 * the last 401, are final.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, it } from "node:test";
import { verifyTenantToken } from "../../src/auth/token.ts";
import { SPENT_TOKEN_RETRIES, TenantApi } from "../../src/cli/lease/tenant-api.ts";
import { isFredError } from "../../src/core/errors.ts";

const LEASE = "01900000-0000-7000-8000-0000000000aa";
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 1);

/** A provider that refuses the first `refusals` requests with 401, then answers 200. */
async function provider(refusals: number): Promise<{ api: TenantApi; tokens: string[]; server: Server }> {
  const tokens: string[] = [];
  const server = createServer((req, res) => {
    tokens.push(String(req.headers.authorization).replace(/^Bearer /, ""));
    req.resume();
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      if (tokens.length <= refusals) {
        res.statusCode = 401;
        res.end(JSON.stringify({ error: "unauthorized" }));
      } else res.end(JSON.stringify({ lease_uuid: LEASE }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return { api: new TenantApi(`http://127.0.0.1:${port}`, KEY), tokens, server };
}

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
});

const timestampOf = (token: string) => verifyTenantToken(token, { nowMs: Date.now() }).timestamp;

describe("tenant CLI API client: a refused token", () => {
  it("a call that spends its token retries a 401 with a fresh token (another second)", async () => {
    for (const [path, method] of [
      ["connection", "GET"],
      ["restart", "POST"],
    ] as const) {
      const p = await provider(1);
      servers.push(p.server);
      const answer = await p.api.lease(LEASE, path, { method, ...(method === "POST" ? { body: {} } : {}) });
      assert.equal(answer.status, 200);
      assert.equal(p.tokens.length, 2, path);
      assert.notEqual(p.tokens[0], p.tokens[1]);
      assert.notEqual(timestampOf(p.tokens[1] as string), timestampOf(p.tokens[0] as string));
    }
  });

  it("the last 401 is final, and a read that spends nothing is not retried", async () => {
    const always = await provider(1 + SPENT_TOKEN_RETRIES);
    const read = await provider(1);
    servers.push(always.server, read.server);
    const err = await always.api.lease(LEASE, "connection").catch((e: unknown) => e);
    assert.ok(isFredError(err, "ERR_TENANT_API"), String(err));
    assert.match(err.message, /^401 .*token was refused/);
    assert.equal(always.tokens.length, 1 + SPENT_TOKEN_RETRIES);
    assert.equal(
      new Set(always.tokens.map(timestampOf)).size,
      always.tokens.length,
      "each try another second",
    );
    const status = await read.api.lease(LEASE, "status").catch((e: unknown) => e);
    assert.ok(isFredError(status, "ERR_TENANT_API"));
    assert.equal(read.tokens.length, 1);
  });

  it("replay-protected tokens of one process carry distinct seconds the API accepts", () => {
    const api = new TenantApi("http://127.0.0.1:1", KEY);
    const now = Math.floor(Date.now() / 1000);
    const stamps = Array.from({ length: 26 }, () => timestampOf(api.token(LEASE)));
    assert.equal(new Set(stamps).size, stamps.length, "never the same second twice");
    for (const t of stamps) assert.ok(t >= now - 21 && t <= now + 6, `${t - now} s from now`);
  });
});
