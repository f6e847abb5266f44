import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { Agent, request } from "undici";
import { TestPki } from "../../helpers/certs.ts";
import { type RunResult as CliResult, runFred } from "../../support/index.ts";
import { SECRET } from "./helpers.ts";
import { spawnMock } from "./process.ts";

/** `fred <args>` with only PATH, HOME and `env`: no MOCK_BACKEND_* leaks in from the test run. */
function run(args: string[], env: Record<string, string>): Promise<CliResult> {
  return runFred(args, { env, cleanEnv: true });
}

describe("fred backend mock (CLI)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-mock-cli-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("--initialize-storage-identity new binds a fresh journal once; the start verifies it", async () => {
    const db = join(dir, "init.db");
    const first = await run(["backend", "mock", "--initialize-storage-identity", "new"], {
      MOCK_BACKEND_DB_PATH: db,
    });
    assert.equal(first.code, 0, first.stderr);
    const { storage_id } = JSON.parse(first.stdout) as { storage_id: string };
    assert.match(storage_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const again = await run(["backend", "mock", "--initialize-storage-identity", "new"], {
      MOCK_BACKEND_DB_PATH: db,
    });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already bound/);
    assert.equal(again.stdout, "");
    const mock = await spawnMock({
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_STORAGE_ID: storage_id,
      MOCK_BACKEND_CALLBACK_SECRET: SECRET,
      MOCK_BACKEND_DB_PATH: db,
    });
    assert.equal(mock.ready.storage_id, storage_id);
    assert.equal((await mock.stop()).code, 0);
    const noPath = await run(["backend", "mock", "--initialize-storage-identity", "new"], {});
    assert.equal(noPath.code, 1);
    assert.match(noPath.stderr, /needs MOCK_BACKEND_DB_PATH/);
  });

  it("serves HTTPS with MOCK_BACKEND_TLS_CERT_FILE and _KEY_FILE", async () => {
    new TestPki(dir).selfSigned("tls", "/CN=localhost", "subjectAltName=IP:127.0.0.1");
    const cert = join(dir, "tls.pem");
    const key = join(dir, "tls.key");
    const mock = await spawnMock({
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_STORAGE_ID: randomUUID(),
      MOCK_BACKEND_CALLBACK_SECRET: SECRET,
      MOCK_BACKEND_TLS_CERT_FILE: cert,
      MOCK_BACKEND_TLS_KEY_FILE: key,
    });
    const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
    try {
      assert.match(mock.ready.url, /^https:\/\//);
      const res = await request(`${mock.ready.url}/health`, { dispatcher });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(await res.body.json(), { status: "healthy" });
    } finally {
      await dispatcher.close();
      await mock.stop();
    }
    const half = await run(["backend", "mock"], {
      MOCK_BACKEND_STORAGE_ID: randomUUID(),
      MOCK_BACKEND_CALLBACK_SECRET: SECRET,
      MOCK_BACKEND_TLS_CERT_FILE: cert,
    });
    assert.equal(half.code, 1);
    assert.match(half.stderr, /must be set together/);
  });

  it("--help lists the environment variables with examples", async () => {
    const r = await run(["backend", "mock", "--help"], {});
    assert.equal(r.code, 0);
    for (const v of [
      "MOCK_BACKEND_STORAGE_ID",
      "MOCK_BACKEND_DB_PATH",
      "MOCK_BACKEND_FAIL_LEASES",
      "Examples:",
    ]) {
      assert.match(r.stdout, new RegExp(v));
    }
  });
  const bad: [string, Record<string, string>, RegExp][] = [
    ["a missing storage id", { MOCK_BACKEND_CALLBACK_SECRET: SECRET }, /MOCK_BACKEND_STORAGE_ID is required/],
    [
      "a short secret",
      { MOCK_BACKEND_STORAGE_ID: randomUUID(), MOCK_BACKEND_CALLBACK_SECRET: "short" },
      /at least 32 bytes/,
    ],
    [
      "a malformed SKU map",
      {
        MOCK_BACKEND_STORAGE_ID: randomUUID(),
        MOCK_BACKEND_CALLBACK_SECRET: SECRET,
        MOCK_BACKEND_SKUS: '{"x":1}',
      },
      /MOCK_BACKEND_SKUS key "x" is not a SKU UUID/,
    ],
    [
      "a bad delay",
      {
        MOCK_BACKEND_STORAGE_ID: randomUUID(),
        MOCK_BACKEND_CALLBACK_SECRET: SECRET,
        MOCK_BACKEND_DELAY: "2 days",
      },
      /MOCK_BACKEND_DELAY must be a Go duration/,
    ],
  ];
  for (const [name, env, message] of bad) {
    it(`exits 1 with a clear message on ${name} and prints nothing on stdout`, async () => {
      const r = await run(["backend", "mock"], env);
      assert.equal(r.code, 1);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, "");
      assert.doesNotMatch(r.stderr, new RegExp(SECRET));
    });
  }
});
