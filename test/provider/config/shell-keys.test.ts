import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { baseConfig, problemsOf, yamlOf } from "./fixtures.ts";

/** The tenant_shell_* keys: their defaults take effect, bad values are refused by name. */
describe("tenant_shell_* configuration", () => {
  it("defaults: on, 4 per lease, 64 in total, 10 min idle, 1 h at most, 1 MiB/s", () => {
    const c = parseProviderConfig(yamlOf(baseConfig()));
    assert.equal(c.tenantShellEnabled, true);
    assert.equal(c.tenantShellSessionsPerLease, 4);
    assert.equal(c.tenantShellSessionsTotal, 64);
    assert.equal(c.tenantShellIdleTimeoutMs, 600_000);
    assert.equal(c.tenantShellMaxDurationMs, 3_600_000);
    assert.equal(c.tenantShellOutputBytesPerSecond, 1_048_576);
  });

  it("takes set values", () => {
    const c = parseProviderConfig(
      yamlOf({ ...baseConfig(), tenant_shell_enabled: false, tenant_shell_idle_timeout: "30s" }),
    );
    assert.equal(c.tenantShellEnabled, false);
    assert.equal(c.tenantShellIdleTimeoutMs, 30_000);
  });

  for (const [key, value] of [
    ["tenant_shell_enabled", "sometimes"],
    ["tenant_shell_sessions_per_lease", 0],
    ["tenant_shell_sessions_total", -1],
    ["tenant_shell_idle_timeout", "0s"],
    ["tenant_shell_max_duration", "forever"],
    ["tenant_shell_output_bytes_per_second", 1.5],
  ] as const) {
    it(`refuses ${key}: ${JSON.stringify(value)}, naming it`, () => {
      const problems = problemsOf((c) => {
        c[key] = value;
      });
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.match(problems[0]!, new RegExp(`^${key} `));
    });
  }
});
