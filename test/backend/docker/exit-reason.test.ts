import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { exitReason } from "../../../src/backend/docker/docker-metrics.ts";

/** fred_docker_container_exits_total's reason: the engine's OOM flag first, then the exit code. */
describe("container exit reason", () => {
  it("OOM wins over the code; 0 completed; a signal killed; anything else error", () => {
    assert.equal(exitReason(true, 137), "oom");
    assert.equal(exitReason(false, 0), "completed");
    assert.equal(exitReason(false, 137), "killed");
    assert.equal(exitReason(false, 143), "killed");
    assert.equal(exitReason(false, 3), "error");
    assert.equal(exitReason(false, 128), "error");
    assert.equal(exitReason(false, undefined), "error");
  });
});
