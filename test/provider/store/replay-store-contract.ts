import assert from "node:assert/strict";
import { it } from "node:test";
import type { ReplayStore } from "../../../src/provider/store/index.ts";

/**
 * What every replay store (src/provider/store/replay-store.ts) must do, whatever its
 * engine. `open` gives a store on the suite's storage; `reopen` a new handle on the same
 * storage (a restarted providerd, or another instance); `close` releases one.
 */
export interface ReplayStoreEngine {
  open(): Promise<ReplayStore>;
  reopen(): Promise<ReplayStore>;
  close(store: ReplayStore): Promise<void>;
}

export function replayStoreContract(engine: () => ReplayStoreEngine): void {
  it("accepts the first use, refuses replays until expiry, across a restart, then sweeps", async () => {
    const e = engine();
    const first = await e.open();
    assert.equal(await first.tryUse("sig-a", 1_000, 0), true);
    assert.equal(await first.tryUse("sig-a", 1_000, 500), false);
    await e.close(first);
    const t = await e.reopen();
    assert.equal(await t.tryUse("sig-a", 1_000, 999), false, "replay rows survive a restart");
    assert.equal(await t.tryUse("sig-a", 2_000, 1_000), true, "an expired row no longer blocks");
    assert.equal(await t.tryUse("sig-a", 2_000, 1_500), false, "the reused row is live again");
    assert.equal(await t.tryUse("sig-b", 1_500, 1_000), true);
    assert.equal(await t.size(), 2);
    assert.equal(await t.sweep(1_500), 1, "sig-b expired at 1,500");
    assert.equal(await t.size(), 1);
    assert.equal(await t.sweep(1_500), 0);
    await e.close(t);
  });

  it("refuses an empty key and records nothing", async () => {
    const e = engine();
    const t = await e.open();
    await assert.rejects(t.tryUse("", 1, 0), { code: "ERR_TOKEN_KEY" });
    assert.equal(await t.size(), 0);
    await e.close(t);
  });

  it("racing uses of one key, through two handles, give exactly one first use", async () => {
    const e = engine();
    const a = await e.open();
    const b = await e.reopen();
    const keys = Array.from({ length: 20 }, (_, i) => `race-${i}`);
    const results = await Promise.all(
      keys.flatMap((k) => [a.tryUse(k, 10_000, 0), b.tryUse(k, 10_000, 0), a.tryUse(k, 10_000, 0)]),
    );
    for (let i = 0; i < keys.length; i++) {
      const wins = results.slice(i * 3, i * 3 + 3).filter(Boolean).length;
      assert.equal(wins, 1, `${keys[i]}: ${wins} first uses`);
    }
    assert.equal(await b.size(), keys.length);
    await e.close(a);
    await e.close(b);
  });
}
