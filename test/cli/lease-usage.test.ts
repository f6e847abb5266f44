import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { bytes, sparkline, usageLines } from "../../src/cli/lease/usage.ts";
import { mockSkus, Stack } from "../provider/e2e/stack.ts";
import { runFred, until } from "../support/index.ts";

/**
 * `fred lease usage` as a tenant runs it: a real CLI process against a devnet, a mock
 * backend sampling every 200 ms and providerd. Piped, stdout is the API's body; with
 * --output text, a table with sparklines.
 */
const stack = new Stack();
let lease: string;

before(async () => {
  await stack.start((s) => [
    {
      MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")),
      MOCK_BACKEND_DELAY: "0s",
      MOCK_BACKEND_USAGE_SAMPLE_INTERVAL: "200ms",
    },
  ]);
  await stack.startProviderd();
  lease = (await stack.createLeases(1, "docker-small"))[0] as string;
  await stack.waitState([lease], "LEASE_STATE_ACTIVE");
});

after(async () => {
  await stack.close();
});

const as = () => ["--from", "tenant1", "--home", join(stack.dir, "devnet"), "--provider-url", stack.api];

describe("fred lease usage (pure parts)", () => {
  it("draws a sparkline from zero to the maximum, a space where nothing was sampled", () => {
    assert.equal(sparkline([0, 1, 2, 3, 4, 5, 6, 7]), "▁▂▃▄▅▆▇█");
    assert.equal(sparkline([null, 4, 4], 8), " ▅▅");
    assert.equal(sparkline([]), "-");
    assert.equal(sparkline(Array.from({ length: 360 }, (_, i) => i)).length, 24);
    assert.equal(bytes(1536), "1.5 KiB");
    assert.equal(bytes(null), "-");
  });

  it("says so when nothing was sampled yet", () => {
    assert.match(usageLines({ instances: [] }).join("\n"), /no instance sampled yet/);
  });
});

describe("fred lease usage (devnet + providerd + mock backend)", () => {
  it("piped: the API's body as one JSON document, history included", async () => {
    const body = await until(
      async () => {
        const r = await runFred(["lease", "usage", lease, ...as()]);
        assert.equal(r.code, 0, r.stderr);
        const b = JSON.parse(r.stdout) as { lease_uuid: string; history: { timestamps: string[] } };
        return b.history.timestamps.length >= 3 ? b : undefined;
      },
      "three samples through the CLI",
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    assert.equal(body.lease_uuid, lease);
  });

  it("--output text: a table with the instance, its limits and sparklines", async () => {
    const r = await runFred(["lease", "usage", lease, "--output", "text", ...as()]);
    assert.equal(r.code, 0, r.stderr);
    const [header, row] = r.stdout.trim().split("\n");
    assert.match(
      header ?? "",
      /^INSTANCE\s+CPU CORES\s+CPU 1H\s+MEMORY\s+MEMORY 1H\s+NET IN \/ OUT\s+DISK\s+RESTARTS\s+UPTIME$/,
    );
    assert.match(row ?? "", /^app\/0 /);
    assert.match(row ?? "", / \/ 512 MiB /, "memory limit of the SKU");
    assert.match(row ?? "", / \/ 0\.5 /, "CPU cores of the SKU");
    assert.match(row ?? "", / \/ 1\.0 GiB /, "disk quota of the SKU");
    assert.match(row ?? "", /[▁▂▃▄▅▆▇█]{2,}/, "sparklines");
  });

  it("a malformed UUID is refused before anything is sent, exit 1", async () => {
    const r = await runFred(["lease", "usage", "not-a-uuid", ...as()]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /UUID/i);
  });
});
