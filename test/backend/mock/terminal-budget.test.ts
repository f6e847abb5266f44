import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { RunningBackend } from "../../../src/backend/kit/index.ts";
import { loadMockBackendConfig } from "../../../src/backend/mock/config.ts";
import { startMockBackend } from "../../../src/backend/mock/main.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { signedClient } from "../kit/signed-client.ts";
import { SECRET, SKU } from "./helpers.ts";

/**
 * terminal_budget over the contract: a mock backend whose lease fails at every start,
 * provisioned again and again on a manual clock, read back through GET /provisions/{uuid}
 * before and after a backend restart on the same journal.
 */
const MIN = 60_000;
const silent = createLogger("budget-test", "silent");

describe("terminal_budget on GET /provisions/{uuid} (mock backend, manual clock)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-mock-budget-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("counts a failing workload's streak, exhausts it only past 30 minutes, keeps it across a restart", async () => {
    const clock = new ManualClock(Date.now());
    const lease = randomUUID();
    const burst = randomUUID();
    const config = loadMockBackendConfig({
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_STORAGE_ID: randomUUID(),
      MOCK_BACKEND_CALLBACK_SECRET: SECRET,
      MOCK_BACKEND_FAIL_LEASES: `${lease},${burst}`,
      MOCK_BACKEND_DB_PATH: join(dir, "journal.db"),
    });
    let b: RunningBackend = await startMockBackend(config, { logger: silent, clock });
    try {
      const client = () => signedClient(b.url, SECRET, () => clock.now());
      const failOnce = async (uuid: string) => {
        const op = randomUUID();
        const settled = new Promise<void>((resolve) => {
          const off = b.engine.on((e, l) => {
            if (e === "operation:settled" && l === uuid) {
              off();
              resolve();
            }
          });
        });
        const res = await client().post("/provision", {
          lease_uuid: uuid,
          tenant: "manifest1budget",
          provider_uuid: "01234567-89ab-7def-8123-456789abcdef",
          items: [{ sku: SKU, quantity: 1 }],
          callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${op}`,
        });
        assert.equal(res.status, 202, res.text);
        await settled;
      };
      const budgetOf = async (uuid: string) => {
        const res = await client().get(`/provisions/${uuid}`);
        assert.equal(res.status, 200, res.text);
        return (res.json as { terminal_budget?: unknown }).terminal_budget;
      };

      await failOnce(lease);
      assert.deepEqual(await budgetOf(lease), { verdict: "retry", consecutive_failures: 1 });
      clock.advance(10 * MIN);
      await failOnce(lease);
      clock.advance(5 * MIN);
      await failOnce(lease);
      assert.deepEqual(
        await budgetOf(lease),
        { verdict: "retry", consecutive_failures: 3 },
        "three failures inside 30 minutes are an outage, not a verdict",
      );
      clock.advance(16 * MIN);
      await failOnce(lease);
      assert.deepEqual(await budgetOf(lease), { verdict: "exhausted", consecutive_failures: 4 });

      // A quick burst on another lease never exhausts.
      for (let i = 0; i < 5; i++) await failOnce(burst);
      assert.deepEqual(await budgetOf(burst), { verdict: "retry", consecutive_failures: 5 });

      // The inventory rows carry the same budget.
      const page = (await client().get(`/provisions?lease_uuid=${lease}`)).json as {
        provisions: { terminal_budget?: unknown }[];
      };
      assert.deepEqual(page.provisions[0]?.terminal_budget, {
        verdict: "exhausted",
        consecutive_failures: 4,
      });

      // Durable: a restarted backend on the same journal reports the recorded verdict.
      await b.close();
      b = await startMockBackend(config, { logger: silent, clock });
      assert.deepEqual(await budgetOf(lease), { verdict: "exhausted", consecutive_failures: 4 });

      // The reset restart/update will call: the streak starts over, durably.
      assert.equal(await b.engine.resetTerminalBudget(lease), true);
      assert.deepEqual(await budgetOf(lease), { verdict: "retry", consecutive_failures: 0 });
      await b.close();
      b = await startMockBackend(config, { logger: silent, clock });
      assert.deepEqual(await budgetOf(lease), { verdict: "retry", consecutive_failures: 0 });

      // A closed lease answers from its diagnostics, which carry no budget.
      const closed = new Promise<void>((resolve) => {
        const off = b.engine.on((e, l) => {
          if (e === "close:done" && l === lease) {
            off();
            resolve();
          }
        });
      });
      assert.equal((await client().post("/deprovision", { lease_uuid: lease })).status, 200);
      await closed;
      assert.equal(await budgetOf(lease), undefined);
    } finally {
      await b.close();
    }
  });
});
