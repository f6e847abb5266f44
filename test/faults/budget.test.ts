import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RunningBackend } from "../../src/backend/kit/index.ts";
import { loadMockBackendConfig } from "../../src/backend/mock/config.ts";
import { startMockBackend } from "../../src/backend/mock/main.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { newUuidV4 } from "../../src/core/uuid.ts";
import { createLogger } from "../../src/log.ts";
import { signedClient } from "../backend/kit/signed-client.ts";
import { SECRETS, Stack } from "../provider/e2e/stack.ts";
import { until } from "../support/index.ts";
import { assertConverged, metric } from "./fleet.ts";

/**
 * An exhausted terminal budget closes the lease on chain, end to end (devnet, one mock
 * backend, providerd). The lease runs on mock-1; its workload then keeps crashing on its
 * own for 32 simulated minutes. Simulated time cannot reach a running backend process
 * (providerd signs its requests with the real clock), so that half hour is written into
 * mock-1's journal by the same backend code run in this process on a manual clock, with
 * the real mock-1 stopped; the real mock-1 then restarts on that journal. providerd's sweep
 * reads the verdict from GET /provisions/{uuid}, closes the lease with the curated reason,
 * and the lease's workload is torn down.
 */
const stack = new Stack();
const MIN = 60_000;

before(async () => {
  await stack.start(
    () => [{}],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }];
      s.extraConfig = { reconciliation_interval: "2s" };
    },
  );
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

/** Runs mock-1's backend code in this process on mock-1's journal, with `lease` failing at every start. */
async function mockOnManualClock(lease: string, clock: ManualClock): Promise<RunningBackend> {
  const config = loadMockBackendConfig({
    ...stack.mockEnvs[0]!,
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_FAIL_LEASES: lease,
  });
  return startMockBackend(config, { logger: createLogger("budget-faults", "silent"), clock });
}

describe("faults: a workload that keeps crashing (devnet + providerd + mock backend)", () => {
  it("an exhausted terminal_budget closes the lease on chain with the curated reason", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    await stack.stopMock(0);

    const clock = new ManualClock(Date.now() - 45 * MIN);
    const b = await mockOnManualClock(lease!, clock);
    try {
      const client = signedClient(b.url, SECRETS[0]!, () => clock.now());
      // The host loses the workload first (a platform failure: it does not count)…
      assert.equal((await client.post(`/_mock/lose/${lease}`, undefined)).status, 200);
      // …then every re-provision crashes on its own: at 0, 16 and 32 minutes.
      for (let i = 0; i < 3; i++) {
        if (i > 0) clock.advance(16 * MIN);
        const settled = new Promise<void>((resolve) => {
          const off = b.engine.on((e, l) => {
            if (e === "operation:settled" && l === lease) {
              off();
              resolve();
            }
          });
        });
        const res = await client.post("/provision", {
          lease_uuid: lease,
          tenant: stack.tenant.address,
          provider_uuid: stack.keys.provider_uuid,
          items: [{ sku: stack.sku("docker-small"), quantity: 1 }],
          callback_url: `${stack.api}/callbacks/provision?operation_id=${newUuidV4()}`,
        });
        assert.equal(res.status, 202, res.text);
        await settled;
      }
      const info = (await client.get(`/provisions/${lease}`)).json as { terminal_budget?: unknown };
      assert.deepEqual(info.terminal_budget, { verdict: "exhausted", consecutive_failures: 3 });
    } finally {
      await b.close();
    }

    await stack.restartMock(0);
    await stack.waitState([lease!], "LEASE_STATE_CLOSED", 60_000);
    assert.equal((await stack.tenant.getLease(lease!))?.closureReason, "workload failed repeatedly");
    await until(
      async () => (await metric(stack, "fred_reconciler_actions_total", 'action="close"')) >= 1,
      "the reconciler's close counted",
    );
    await assertConverged(stack, [lease!]);
  });
});
