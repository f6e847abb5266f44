import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { tenantDiagnostics } from "../../../src/provider/api/diagnostics.ts";

/** What of a backend's provision record reaches the tenant: terminal_budget passes through on shape only. */
describe("tenant diagnostics: terminal_budget", () => {
  it("passes a budget on the contract's shape through", () => {
    const d = tenantDiagnostics({
      lease_uuid: "0190f3a2-7c1e-7000-8000-000000000001",
      status: "failed",
      fail_count: 4,
      reason: "ContainerExited",
      terminal_budget: { verdict: "exhausted", consecutive_failures: 3, extra: true },
    });
    assert.deepEqual(d, {
      status: "failed",
      failCount: 4,
      terminalBudget: { verdict: "exhausted", consecutive_failures: 3 },
      reason: "ContainerExited",
    });
  });

  it("omits a budget the backend did not report or sent off its shape", () => {
    for (const terminal_budget of [
      undefined,
      null,
      "exhausted",
      { verdict: "maybe", consecutive_failures: 1 },
      { verdict: "retry", consecutive_failures: -1 },
      { verdict: "retry", consecutive_failures: 1.5 },
      { verdict: "retry" },
    ]) {
      const d = tenantDiagnostics({ status: "ready", fail_count: 0, terminal_budget });
      assert.equal(d.terminalBudget, undefined, JSON.stringify(terminal_budget));
      assert.equal(d.status, "ready");
    }
  });
});
