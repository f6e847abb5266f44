import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { type Substrate, startBackend } from "../../../../src/backend/kit/index.ts";
import { DEFAULT_MOCK_PROFILE } from "../../../../src/backend/mock/config.ts";
import { MockSubstrate } from "../../../../src/backend/mock/substrate.ts";
import { systemClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";
import { SECRET } from "../../mock/helpers.ts";
import { signedClient } from "../signed-client.ts";

/** A substrate without restart/update: both routes answer 501 `unsupported`, whatever the body. */
describe("restart and update on a substrate without them", () => {
  it("answer 501 unsupported, even for a body that would be refused", async () => {
    const mock = new MockSubstrate({
      clock: systemClock,
      backendName: "plain",
      delayMs: 0,
      failRate: 0,
      failLeases: new Set(),
      hangLeases: new Set(),
    });
    // The same substrate, minus the two optional maintenance methods.
    const plain = new Proxy(mock, {
      get(target, key) {
        if (key === "restart" || key === "update") return undefined;
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Substrate;
    const b = await startBackend({
      name: "plain",
      substrate: plain,
      journal: { path: ":memory:", mode: "bind-or-verify", storageId: randomUUID() },
      logger: createLogger("unsupported-test", "silent"),
      secret: SECRET,
      listen: { host: "127.0.0.1", port: 0 },
      resolveSku: () => DEFAULT_MOCK_PROFILE,
      pool: { totals: { cpuCores: 4, memoryMb: 4096, diskMb: 4096 } },
    });
    try {
      const c = signedClient(b.url, SECRET);
      for (const op of ["restart", "update"]) {
        for (const body of [{}, { lease_uuid: randomUUID(), maintenance_id: randomUUID() }]) {
          const res = await c.post(`/${op}`, body);
          assert.equal(res.status, 501, op);
          assert.equal((res.json as { code: string }).code, "unsupported");
        }
      }
    } finally {
      await b.close();
    }
  });
});
