import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runFred } from "../../support/index.ts";
import { Stack } from "../e2e/stack.ts";

/** `fred loadtest` against a real stack: a devnet-made lease, the tenant's key, providerd. */
const stack = new Stack();
let lease: string;

before(async () => {
  await stack.start(() => [{}]);
  await stack.startProviderd();
  [lease] = (await stack.createLeases(1, "docker-small")) as [string];
  await stack.waitState([lease], "LEASE_STATE_ACTIVE");
});

after(async () => {
  await stack.close();
});

interface Result {
  scenario: string;
  requests: number;
  successes: number;
  statuses: Record<string, number>;
  errors: number;
  throughput_rps: number;
  p50_ms: number;
  p99_ms: number;
}

async function loadtest(...args: string[]): Promise<Result> {
  const r = await runFred(["loadtest", "--target", stack.api, ...args]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Result;
}

describe("fred loadtest", () => {
  it("status: authenticated reads of a fixture lease, bounded by --count", async () => {
    const fixtures = join(stack.dir, "fixtures.json");
    const keyFile = join(stack.dir, "tenant.hex");
    writeFileSync(fixtures, JSON.stringify({ leases: [{ lease_uuid: lease }] }));
    writeFileSync(keyFile, stack.account("tenant1").private_key_hex, { mode: 0o600 });
    const r = await loadtest(
      "--scenario",
      "status",
      "--fixtures",
      fixtures,
      "--tenant-key-file",
      keyFile,
      "--count",
      "40",
      "--concurrency",
      "4",
      "--duration",
      "2m",
    );
    assert.deepEqual([r.scenario, r.requests, r.successes, r.errors], ["status", 40, 40, 0]);
    assert.deepEqual(r.statuses, { "200": 40 });
    assert.ok(r.throughput_rps > 0 && r.p50_ms > 0 && r.p99_ms >= r.p50_ms, JSON.stringify(r));
  });

  it("rejection: an unauthenticated storm is refused (401/429) and measured", async () => {
    const r = await loadtest("--scenario", "rejection", "--count", "100", "--concurrency", "8");
    assert.deepEqual([r.requests, r.successes, r.errors], [100, 0, 0]);
    for (const code of Object.keys(r.statuses)) assert.ok(["401", "429"].includes(code), JSON.stringify(r));
  });

  it("refuses a target that is not loopback unless --remote, and unbounded flags", async () => {
    const remote = await runFred(["loadtest", "--target", "http://10.0.0.7:8080"]);
    assert.equal(remote.code, 1);
    assert.match(remote.stderr, /is not loopback; pass --remote/);
    const huge = await runFred(["loadtest", "--target", stack.api, "--count", "0"]);
    assert.equal(huge.code, 1);
    assert.match(huge.stderr, /--count must be an integer from 1 to 1000000/);
  });
});
