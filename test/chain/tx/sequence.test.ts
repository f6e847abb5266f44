import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type AccountState, SequenceOwner } from "../../../src/chain/cosmos/tx-pipeline.ts";

describe("sequence owner", () => {
  it("serialises sends per key and counts consumed sequences locally", async () => {
    let reads = 0;
    const owner = new SequenceOwner("addr", async () => {
      reads++;
      return { accountNumber: 3n, sequence: 10 };
    });
    let active = 0;
    let maxActive = 0;
    const used: number[] = [];
    const send = (consumed: boolean) =>
      owner.exclusive(async (acct: AccountState) => {
        active++;
        maxActive = Math.max(maxActive, active);
        await new Promise((r) => setImmediate(r));
        used.push(acct.sequence);
        active--;
        return { value: acct.sequence, consumed };
      });
    const results = await Promise.all([send(true), send(true), send(false), send(true)]);
    assert.deepEqual(results, [10, 11, 12, 12]);
    assert.deepEqual(used, [10, 11, 12, 12]);
    assert.equal(maxActive, 1);
    assert.equal(reads, 1);
    owner.correct(20);
    assert.equal(await send(true), 20);
    owner.invalidate();
    assert.equal(await send(true), 10);
    assert.equal(reads, 2);
  });

  it("a failing send releases the key and does not consume the sequence", async () => {
    const owner = new SequenceOwner("addr", async () => ({ accountNumber: 0n, sequence: 0 }));
    await assert.rejects(
      owner.exclusive(async () => {
        throw new Error("boom");
      }),
      /boom/,
    );
    assert.equal(await owner.exclusive(async (a) => ({ value: a.sequence, consumed: true })), 0);
    const aborted = AbortSignal.abort(new Error("stop"));
    await assert.rejects(
      owner.exclusive(async (a) => ({ value: a, consumed: true }), aborted),
      /stop/,
    );
  });
});
