import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { baseConfig, problemsOf, yamlOf } from "./fixtures.ts";

/** `lease_usage_metrics`: off by default, a boolean or refused naming the key (file and env). */
describe("providerd config: lease_usage_metrics", () => {
  it("is off by default and takes true", () => {
    assert.equal(parseProviderConfig(yamlOf(baseConfig())).leaseUsageMetrics, false);
    assert.equal(
      parseProviderConfig(yamlOf({ ...baseConfig(), lease_usage_metrics: true })).leaseUsageMetrics,
      true,
    );
    assert.equal(
      parseProviderConfig(yamlOf(baseConfig()), { PROVIDER_LEASE_USAGE_METRICS: "true" }).leaseUsageMetrics,
      true,
    );
  });

  it("refuses a value that is not a boolean, naming the key", () => {
    for (const value of ["yes", 1, "on", null])
      assert.deepEqual(
        problemsOf((c) => {
          c.lease_usage_metrics = value;
        }),
        ["lease_usage_metrics must be true or false"],
        String(value),
      );
    assert.deepEqual(
      problemsOf(() => {}, { PROVIDER_LEASE_USAGE_METRICS: "yes" }),
      ["PROVIDER_LEASE_USAGE_METRICS must be true or false"],
    );
  });
});
