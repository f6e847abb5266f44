import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { launchFred, runFred, until } from "../support/index.ts";

describe("fred up (npm start)", () => {
  const home = mkdtempSync(join(tmpdir(), "fred-up-"));
  after(() => rmSync(home, { recursive: true, force: true }));

  it("starts devnet, mock backend and providerd; a lease becomes ACTIVE; Ctrl-C stops all", async () => {
    await using up = await launchFred(["up", "--home", home], {
      env: { FRED_LOG_LEVEL: process.env.FRED_LOG_LEVEL },
      ready: (line, stream) =>
        stream === "stderr" && line.includes("Press Ctrl-C to stop.") ? true : undefined,
      readyTimeoutMs: 120_000,
    });
    const stderr = up.stderr();
    try {
      const rpc = /devnet\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
      const api = /providerd\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
      assert.ok(rpc, "the devnet RPC URL is printed");
      assert.ok(api, "the providerd URL is printed");
      assert.match(stderr, /mock backend\s+http:\/\/127\.0\.0\.1:\d+/);
      assert.equal(up.stdout(), "", "fred up keeps stdout free of logs");

      const created = await runFred([
        "chain",
        "lease",
        "create",
        "--sku",
        "docker-small",
        "--from",
        "tenant1",
        "--home",
        join(home, "devnet"),
        "--rpc",
        rpc,
      ]);
      assert.equal(created.code, 0, created.stderr);
      const lease = JSON.parse(created.stdout).lease_uuid as string;
      await until(
        async () => {
          const shown = await runFred(["chain", "lease", "show", lease, "--rpc", rpc]);
          return shown.code === 0 && JSON.parse(shown.stdout).state === "LEASE_STATE_ACTIVE";
        },
        "the lease to become ACTIVE",
        { timeoutMs: 90_000, intervalMs: 250 },
      );
      const workloads = await fetch(`${api}/workloads?lease_uuid=${lease}`);
      assert.equal(workloads.status, 200);
      assert.match(await workloads.text(), new RegExp(lease));
    } finally {
      up.signal("SIGINT");
    }
    assert.equal((await up.exited).code, 0, up.stderr().slice(-2000));
  });
});
