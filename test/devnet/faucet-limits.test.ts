/**
 * The faucet's bounds on a manual clock: an address and denom wait the whole cooldown, the
 * total rate counts the last 60 seconds, and a failed send hands the address its slot back.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock } from "../../src/core/clock.ts";
import { CreditLimits } from "../../src/devnet/faucet/limits.ts";

describe("faucet credit limits", () => {
  it("an address waits the whole cooldown, then may take again", () => {
    const clock = new ManualClock();
    const limits = new CreditLimits({ cooldownMs: 10_000, creditsPerMinute: 100, clock });
    assert.equal(limits.take("a/umfx"), undefined);
    assert.equal(limits.take("a/upwr"), undefined, "another denom has its own cooldown");
    clock.advance(9_999);
    assert.deepEqual(limits.take("a/umfx"), { reason: "cooldown", retryAfterMs: 1 });
    clock.advance(1);
    assert.equal(limits.take("a/umfx"), undefined);
  });

  it("the total rate counts grants of the last minute only", () => {
    const clock = new ManualClock();
    const limits = new CreditLimits({ cooldownMs: 0, creditsPerMinute: 3, clock });
    for (const key of ["a", "b"]) assert.equal(limits.take(key), undefined);
    clock.advance(20_000);
    assert.equal(limits.take("c"), undefined);
    assert.deepEqual(limits.take("d"), { reason: "rate", retryAfterMs: 40_000 });
    clock.advance(40_000);
    assert.equal(limits.take("d"), undefined, "a and b left the window");
    assert.equal(limits.take("e"), undefined);
    assert.deepEqual(limits.take("f"), { reason: "rate", retryAfterMs: 20_000 }, "c leaves at 80 s");
  });

  it("a released slot (a failed send) lets the address try again at once", () => {
    const clock = new ManualClock();
    const limits = new CreditLimits({ cooldownMs: 86_400_000, creditsPerMinute: 10, clock });
    assert.equal(limits.take("a/umfx"), undefined);
    limits.release("a/umfx");
    assert.equal(limits.take("a/umfx"), undefined);
    assert.equal(limits.take("a/umfx")?.reason, "cooldown");
  });
});
