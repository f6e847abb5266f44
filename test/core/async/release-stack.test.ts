import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ReleaseStack } from "../../../src/core/async/index.ts";

describe("ReleaseStack", () => {
  it("releases in reverse order of acquisition", async () => {
    const order: string[] = [];
    const stack = new ReleaseStack();
    stack.defer("a", () => order.push("a"));
    stack.use("b", { close: async () => void order.push("b") });
    stack.defer("c", async () => void order.push("c"));
    await stack.close();
    assert.deepEqual(order, ["c", "b", "a"]);
  });

  it("a throwing release does not stop the later ones; each error is reported and the first re-thrown", async () => {
    const order: string[] = [];
    const reported: [string, string][] = [];
    const stack = new ReleaseStack((err, name) => reported.push([name, (err as Error).message]));
    stack.defer("database", () => order.push("database"));
    stack.defer("server", () => {
      throw new Error("server close failed");
    });
    stack.defer("socket", async () => {
      order.push("socket");
      throw new Error("socket close failed");
    });
    stack.defer("timer", () => order.push("timer"));
    await assert.rejects(stack.close(), { message: "socket close failed" });
    assert.deepEqual(order, ["timer", "socket", "database"]);
    assert.deepEqual(reported, [
      ["socket", "socket close failed"],
      ["server", "server close failed"],
    ]);
  });

  it("closes once however often it is asked, and refuses new releases after", async () => {
    let closed = 0;
    const stack = new ReleaseStack();
    stack.defer("once", () => closed++);
    const first = stack.close();
    assert.equal(stack.close(), first);
    await first;
    await stack.close();
    assert.equal(closed, 1);
    assert.throws(() => stack.defer("late", () => {}), /already closed/);
  });

  it("is released by await using at the end of its scope", async () => {
    const order: string[] = [];
    {
      await using stack = new ReleaseStack();
      stack.defer("inner", () => order.push("inner"));
      order.push("body");
    }
    assert.deepEqual(order, ["body", "inner"]);
  });
});
