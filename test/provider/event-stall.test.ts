import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CosmosChain } from "../../src/chain/cosmos/adapter.ts";
import { systemClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/log.ts";
import { providerEventFeed } from "../../src/provider/chain-session.ts";
import { parseProviderConfig } from "../../src/provider/config/index.ts";
import { baseConfig, problemsOf, yamlOf } from "./config/fixtures.ts";

/**
 * `event_stall_timeout` reaches the event feed providerd follows: a feed without a new
 * block for that long is treated as dead (15 s by default, as the reference detects it).
 * The feed's reaction to a stall itself is tested in test/chain/events/feed.test.ts.
 */
const feedOf = (extra: Record<string, unknown>) => {
  const config = parseProviderConfig(yamlOf({ ...baseConfig(), ...extra }));
  return providerEventFeed(config, {} as CosmosChain, systemClock, createLogger("stall-test", "silent"));
};

describe("event_stall_timeout", () => {
  it("defaults to 15 s", () => {
    assert.equal(feedOf({}).heartbeatTimeoutMs, 15_000);
  });

  it("takes the configured duration", () => {
    assert.equal(feedOf({ event_stall_timeout: "40s" }).heartbeatTimeoutMs, 40_000);
  });

  it("refuses zero and nonsense with the key named", () => {
    for (const value of ["0s", "soon"]) {
      const problems = problemsOf((c) => {
        c.event_stall_timeout = value;
      });
      assert.equal(problems.length, 1, problems.join("\n"));
      assert.match(problems[0] ?? "", /^event_stall_timeout /);
    }
  });
});
