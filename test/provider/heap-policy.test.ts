import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const WORKLOAD = fileURLToPath(new URL("heap-policy-workload.ts", import.meta.url));

function peakHeap(apply: boolean): number {
  const r = spawnSync(process.execPath, ["--import", "tsx", WORKLOAD, ...(apply ? ["apply"] : [])], {
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return (JSON.parse(r.stdout) as { peak: number }).peak;
}

describe("providerd's heap policy", () => {
  // Set after startup, the flag only works while V8 keeps reading it at every collection:
  // this fails the day a Node.js upgrade stops honouring it.
  it("keeps a promoted-garbage workload's heap well under V8's default growth", () => {
    const without = peakHeap(false);
    const withPolicy = peakHeap(true);
    assert.ok(
      withPolicy < without * 0.75,
      `peak heap ${Math.round(withPolicy / 2 ** 20)} MB with the policy vs ${Math.round(without / 2 ** 20)} MB without`,
    );
  });
});
