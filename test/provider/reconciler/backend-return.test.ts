import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { logged, metric, withStore } from "../../faults/fleet.ts";
import { until } from "../../support/index.ts";
import { Stack } from "../e2e/stack.ts";

/**
 * No waiting a whole interval for what is already known (devnet, one mock backend,
 * providerd with reconciliation_interval at an hour, so no periodic sweep helps). A
 * provision whose connection is refused (the backend is down: nothing was delivered) is
 * tried again with backoff until the backend answers; and a backend that a sweep could not
 * hear from gets a sweep as soon as its health answers again; fred_health_check_healthy
 * follows each health report.
 */
const stack = new Stack();

before(async () => {
  await stack.start(
    () => [{}],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }];
      s.extraConfig = { reconciliation_interval: "1h" };
    },
  );
  await stack.startProviderd({ FRED_LOG_LEVEL: "info" });
});

after(async () => {
  await stack.close();
});

const context = () => stack.providerd?.logTail() ?? "";

describe("providerd: a backend coming back", () => {
  it("a provision refused at connect time is retried until the backend answers", async () => {
    await stack.stopMock(0);
    const [lease] = await stack.createLeases(1, "docker-small");
    const notSent = () =>
      metric(stack, "fred_provision_requests_total", 'backend="mock-1",outcome="not-sent"');
    await until(async () => (await notSent()) >= 2, "the undelivered provision tried again", { context });
    assert.equal(
      withStore(stack, (s) => s.placements.attemptFor(lease!)),
      undefined,
      "nothing was delivered: no attempt is kept",
    );
    await stack.restartMock(0);
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE", 60_000);
  });

  it("a backend the sweep missed is swept again once its health answers", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    const first = withStore(stack, (s) => s.placements.placement(lease!)?.lifecycleId);
    await stack.stopMock(0);
    stack.providerd!.signal("SIGUSR1");
    await until(
      async () => (await metric(stack, "fred_reconciler_runs_total", 'outcome="degraded"')) > 0,
      "a degraded sweep without mock-1",
      { context },
    );
    const gauge = () => metric(stack, "fred_health_check_healthy", 'check="backend:mock-1"');
    assert.equal((await fetch(`${stack.api}/health`)).status, 200);
    assert.equal(await gauge(), 0, "the health report counts mock-1 unhealthy");
    // The workload vanished while the backend was down (its substrate records are gone).
    rmSync(`${stack.mockEnvs[0]!.MOCK_BACKEND_DB_PATH}.substrate`, { force: true });
    await stack.restartMock(0);
    await until(
      () => withStore(stack, (s) => s.placements.placement(lease!)?.lifecycleId) !== first,
      "the lost workload provisioned again without an operator's sweep",
      { timeoutMs: 90_000, intervalMs: 200, context },
    );
    assert.ok(logged(stack, "backend answers again").some((l) => l.backend === "mock-1"));
    assert.equal((await fetch(`${stack.api}/health`)).status, 200);
    assert.equal(await gauge(), 1);
  });
});
