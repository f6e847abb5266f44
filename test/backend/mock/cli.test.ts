import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { SECRET } from "./helpers.ts";

const FRED = new URL("../../../bin/fred.js", import.meta.url).pathname;

function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FRED, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d;
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d;
    });
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("fred backend mock (CLI)", () => {
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
