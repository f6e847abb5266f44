import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { FRED_BIN, runFred } from "./run-cli.ts";

/** Waits for `predicate` to hold, polling; fails with `what` after `ms`. */
async function until<T>(
  what: string,
  ms: number,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe("fred up (npm start)", () => {
  const home = mkdtempSync(join(tmpdir(), "fred-up-"));
  after(() => rmSync(home, { recursive: true, force: true }));

  it("starts devnet, mock backend and providerd; a lease becomes ACTIVE; Ctrl-C stops all", async () => {
    const child = spawn(process.execPath, [FRED_BIN, "up", "--home", home], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    let stdout = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      await until("fred up to be ready", 120_000, () =>
        stderr.includes("Press Ctrl-C to stop.") ? true : undefined,
      );
      const rpc = /devnet\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
      const api = /providerd\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
      assert.ok(rpc, "the devnet RPC URL is printed");
      assert.ok(api, "the providerd URL is printed");
      assert.match(stderr, /mock backend\s+http:\/\/127\.0\.0\.1:\d+/);
      assert.equal(stdout, "", "fred up keeps stdout free of logs");

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
      await until("the lease to become ACTIVE", 90_000, async () => {
        const shown = await runFred(["chain", "lease", "show", lease, "--rpc", rpc]);
        return shown.code === 0 && JSON.parse(shown.stdout).state === "LEASE_STATE_ACTIVE" ? true : undefined;
      });
      const workloads = await fetch(`${api}/workloads?lease_uuid=${lease}`);
      assert.equal(workloads.status, 200);
      assert.match(await workloads.text(), new RegExp(lease));
    } finally {
      child.kill("SIGINT");
    }
    assert.equal(await exited, 0, stderr.slice(-2000));
  });
});
