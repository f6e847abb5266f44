import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import { ReleaseStack } from "../../src/core/async/index.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { shutDown } from "../../src/provider/shutdown.ts";

/**
 * The second shutdown phase is bounded on the injected clock: a release that never
 * finishes is abandoned at shutdown_timeout with ERR_SHUTDOWN_RELEASE_TIMEOUT in the log,
 * and the releases pushed before it are not waited for (the process is about to exit).
 */
describe("shutDown: the release phase's deadline", () => {
  it("a hanging release is abandoned at the deadline, logged as ERR_SHUTDOWN_RELEASE_TIMEOUT", async () => {
    const clock = new ManualClock(0);
    const logged: { msg: string; err?: { code?: string } }[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => logged.push(JSON.parse(line)) });
    const releases = new ReleaseStack();
    const order: string[] = [];
    releases.defer("first", () => order.push("first"));
    releases.defer("stuck", () => new Promise<never>(() => {}));
    let done = false;
    const stopping = shutDown(releases, async () => {}, 5_000, clock, logger).then(() => {
      done = true;
    });
    await new Promise((r) => setImmediate(r));
    clock.advance(4_999);
    await new Promise((r) => setImmediate(r));
    assert.equal(done, false, "still closing 1 ms before the deadline");
    clock.advance(1);
    await stopping;
    assert.deepEqual(order, [], "what came after the stuck release was abandoned");
    assert.equal(logged.at(-1)?.msg, "shutdown_timeout reached; closing the rest forcibly");
    assert.equal(logged.at(-1)?.err?.code, "ERR_SHUTDOWN_RELEASE_TIMEOUT");
  });

  it("releases that finish in time log nothing", async () => {
    const clock = new ManualClock(0);
    const logged: unknown[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => logged.push(line) });
    const releases = new ReleaseStack();
    releases.defer("quick", async () => {});
    await shutDown(releases, async () => {}, 5_000, clock, logger);
    assert.deepEqual(logged, []);
    assert.equal(clock.pendingTimers, 0, "the deadline's timer is cancelled");
  });
});
