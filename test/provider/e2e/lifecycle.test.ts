import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Stack } from "./stack.ts";

const stack = new Stack();

before(async () => {
  await stack.start();
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

describe("providerd lifecycle (devnet + providerd + mock backends)", () => {
  it("a lease created on chain is provisioned once and becomes ACTIVE", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    const w = await stack.workloads([lease!]);
    assert.equal(w.length, 1);
    assert.equal(w[0]!.status, "ready");
  });
});
