import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ImageGate } from "../../../../src/backend/docker/image-gc/index.ts";

/** The gate between image removal and container creation, step by step (no timing involved). */

function deferred() {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("image gate", () => {
  it("skips a removal while a creation is in progress, and runs it once the creation is done", async () => {
    const gate = new ImageGate();
    let removed = 0;
    {
      using _creating = await gate.creating();
      assert.deepEqual(await gate.removing(async () => ++removed), { skipped: true });
    }
    assert.deepEqual(await gate.removing(async () => ++removed), { skipped: false, value: 1 });
  });

  it("holds a creation back until the removal in progress has finished", async () => {
    const gate = new ImageGate();
    const engine = deferred();
    const steps: string[] = [];
    const removal = gate.removing(async () => {
      await engine.promise;
      steps.push("removed");
    });
    const creation = gate.creating().then((handle) => {
      steps.push("creating");
      return handle;
    });
    assert.deepEqual(await gate.removing(async () => steps.push("second")), { skipped: true });
    engine.resolve();
    await removal;
    (await creation)[Symbol.dispose]();
    assert.deepEqual(steps, ["removed", "creating"]);
  });

  it("a failed removal releases the gate", async () => {
    const gate = new ImageGate();
    await assert.rejects(
      gate.removing(async () => {
        throw new Error("engine refused");
      }),
      /engine refused/,
    );
    using _creating = await gate.creating();
    assert.deepEqual(await gate.removing(async () => 1), { skipped: true });
  });
});
