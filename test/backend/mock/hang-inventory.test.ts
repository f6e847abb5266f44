import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { hmacSecret, signRequest } from "../../../src/auth/hmac.ts";
import { loadMockBackendConfig } from "../../../src/backend/mock/config.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { startReceiver } from "../kit/receiver.ts";
import { signedClient } from "../kit/signed-client.ts";
import { SECRET, SKU } from "./helpers.ts";
import { type MockProcess, mockEnv, spawnMock } from "./process.ts";

/** A signed GET that the test can abandon (the signed client of the kit tests cannot). */
function signedGet(base: string, uri: string, signal: AbortSignal): Promise<Response> {
  const header = signRequest(hmacSecret(SECRET), {
    method: "GET",
    uri,
    body: undefined,
    timestamp: Math.floor(Date.now() / 1000),
  });
  return fetch(base + uri, { headers: { "x-fred-signature": header }, signal });
}

/**
 * MOCK_BACKEND_HANG_INVENTORY on a real `fred backend mock` process: its inventory reads
 * (the reconciler's sweep input) never answer, everything else does, and it still stops.
 */
describe("mock backend failure injection: hanging inventory reads (real process)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-mock-hang-inventory-"));
  let proc: MockProcess | undefined;
  after(async () => {
    await proc?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is refused at startup unless true or false, naming the key", () => {
    const env = { MOCK_BACKEND_STORAGE_ID: randomUUID(), MOCK_BACKEND_CALLBACK_SECRET: SECRET };
    assert.equal(loadMockBackendConfig(env).hangInventory, false);
    assert.equal(loadMockBackendConfig({ ...env, MOCK_BACKEND_HANG_INVENTORY: "1" }).hangInventory, true);
    assert.throws(
      () => loadMockBackendConfig({ ...env, MOCK_BACKEND_HANG_INVENTORY: "sometimes" }),
      (err: unknown) => isFredError(err, "ERR_CONFIG") && /MOCK_BACKEND_HANG_INVENTORY/.test(err.message),
    );
  });

  it("never answers GET /provisions or /retentions, and answers everything else", async () => {
    const rx = await startReceiver(SECRET);
    try {
      proc = await spawnMock(
        mockEnv(SECRET, join(dir, "journal.db"), { MOCK_BACKEND_HANG_INVENTORY: "true" }),
      );
      const base = proc.ready.url;
      const c = signedClient(base, SECRET);
      const lease = randomUUID();
      const res = await c.post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1hang",
        provider_uuid: "01234567-89ab-7def-8123-456789abcdef",
        items: [{ sku: SKU, quantity: 1 }],
        callback_url: `${rx.url}/callbacks/provision?operation_id=${randomUUID()}`,
      });
      assert.equal(res.status, 202, res.text);
      await rx.waitFor((r) => r.effects.includes(`operation:${lease}:success`));

      const abandoned = new AbortController();
      const settled: string[] = [];
      const reads = [
        "/provisions?limit=1000",
        "/retentions?limit=1000",
        `/provisions?lease_uuid=${lease}`,
      ].map((uri) =>
        signedGet(base, uri, abandoned.signal).then(
          (r) => settled.push(`${uri} answered ${r.status}`),
          (err: Error) => settled.push(`${uri} ${err.name}`),
        ),
      );
      // Requests sent after the inventory reads are answered while those still wait.
      assert.equal((await c.get("/provisions?limit=1000", { tamper: "missing" })).status, 401);
      const one = await c.get(`/provisions/${lease}`);
      assert.equal(one.status, 200, one.text);
      assert.equal((one.json as { status: string }).status, "ready");
      assert.equal((await c.get("/health")).status, 200);
      assert.deepEqual(settled, [], "no inventory read answered");

      abandoned.abort();
      await Promise.all(reads);
      assert.deepEqual(settled.sort(), [
        `/provisions?lease_uuid=${lease} AbortError`,
        "/provisions?limit=1000 AbortError",
        "/retentions?limit=1000 AbortError",
      ]);
    } finally {
      await rx.close();
    }
  });

  it("stops on SIGTERM while an inventory read hangs; the reader sees the connection drop", async () => {
    const p = await spawnMock(mockEnv(SECRET, undefined, { MOCK_BACKEND_HANG_INVENTORY: "1" }));
    try {
      const base = p.ready.url;
      const read = signedGet(base, "/provisions", new AbortController().signal).then(
        (r) => `answered ${r.status}`,
        (err: Error) => err.name,
      );
      // Sent after the read on its own connection: the read has reached the server by then.
      assert.equal((await signedClient(base, SECRET).get("/health")).status, 200);
      const exit = await p.stop();
      assert.deepEqual(exit, { code: 0, signal: null });
      assert.equal(await read, "TypeError", "a dropped connection, not a response");
    } finally {
      await p.kill();
    }
  });
});
