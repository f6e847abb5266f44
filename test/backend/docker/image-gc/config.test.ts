import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDockerBackendConfig } from "../../../../src/backend/docker/config.ts";
import { isFredError } from "../../../../src/core/errors.ts";

/** The image_gc_* keys: their defaults, and every value that could not take effect refused by name. */

const SKU = "01900000-0000-7000-8000-000000000001";

function parse(extra: Record<string, unknown> = {}) {
  return parseDockerBackendConfig({
    host_address: "10.0.0.5",
    callback_secret: "0123456789abcdef0123456789abcdef",
    sku_mapping: { [SKU]: "small" },
    sku_profiles: { small: { cpu_cores: 0.5, memory_mb: 512 } },
    ...extra,
  });
}

function refusal(extra: Record<string, unknown>): string {
  try {
    parse(extra);
  } catch (err) {
    assert.ok(isFredError(err, "ERR_CONFIG"), String(err));
    return err.message;
  }
  assert.fail("config was accepted");
}

describe("docker backend config: image collection", () => {
  it("defaults to 24h after last use, a 10m sweep, and marks of 85% and 80%", () => {
    assert.deepEqual(parse().imageGc, {
      afterMs: 24 * 3_600_000,
      intervalMs: 600_000,
      highWaterPercent: 85,
      lowWaterPercent: 80,
    });
    assert.ok(Object.isFrozen(parse().imageGc));
  });

  it("takes Go durations and percentages; image_gc_after 0 turns collection off", () => {
    const c = parse({
      image_gc_after: "0s",
      image_gc_interval: "30s",
      image_gc_high_water_percent: 0,
      image_gc_low_water_percent: 0,
    });
    assert.deepEqual(c.imageGc, { afterMs: 0, intervalMs: 30_000, highWaterPercent: 0, lowWaterPercent: 0 });
    assert.equal(
      parse({ image_gc_high_water_percent: 100, image_gc_low_water_percent: 92.5 }).imageGc.lowWaterPercent,
      92.5,
    );
  });

  it("refuses negative or malformed durations, naming the key", () => {
    assert.match(refusal({ image_gc_after: "-1h" }), /image_gc_after: "-1h" is not a Go duration ≥ 0/);
    assert.match(refusal({ image_gc_after: "a day" }), /image_gc_after/);
    assert.match(refusal({ image_gc_after: 3600 }), /image_gc_after/);
    assert.match(refusal({ image_gc_interval: "0s" }), /image_gc_interval must be greater than zero/);
    assert.match(refusal({ image_gc_interval: "-5m" }), /image_gc_interval/);
  });

  it("refuses percentages outside 0–100, and a low mark above the high one", () => {
    assert.match(
      refusal({ image_gc_high_water_percent: 101 }),
      /image_gc_high_water_percent must be a number from 0 to 100/,
    );
    assert.match(refusal({ image_gc_high_water_percent: -1 }), /image_gc_high_water_percent/);
    assert.match(refusal({ image_gc_low_water_percent: 100.5 }), /image_gc_low_water_percent/);
    assert.match(refusal({ image_gc_low_water_percent: "80%" }), /image_gc_low_water_percent/);
    assert.match(
      refusal({ image_gc_high_water_percent: 70, image_gc_low_water_percent: 75 }),
      /image_gc_low_water_percent \(75\) must not exceed image_gc_high_water_percent \(70\)/,
    );
  });
});
