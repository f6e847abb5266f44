import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { closestName } from "../../src/core/closest.ts";

describe("closestName (did you mean)", () => {
  const skus = ["docker-small", "docker-medium", "docker-large", "billing-only"];

  it("suggests the nearest name for a likely typo", () => {
    assert.equal(closestName("docker-smal", skus), "docker-small");
    assert.equal(closestName("Docker-Medium", skus), "docker-medium");
    assert.equal(closestName("docker-lrage", skus), "docker-large");
  });

  it("suggests nothing when no name is near enough", () => {
    assert.equal(closestName("gpu-xl", skus), undefined);
    assert.equal(closestName("docker", skus), undefined);
    assert.equal(closestName("x", []), undefined);
  });
});
