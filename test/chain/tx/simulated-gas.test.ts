import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SimulateResponse as CosmjsSimulateResponse } from "cosmjs-types/cosmos/tx/v1beta1/service";
import { SimulateResponse } from "../../../src/chain/proto/index.ts";

/**
 * The tx pipeline reads a Simulate answer for its gas alone: whatever the result field
 * holds (every message's events) is skipped, in either field order, and an answer without
 * gas info reads as such (the pipeline then falls back to gas_limit).
 */
const events = Array.from({ length: 1000 }, (_, i) => ({
  type: "lease_acknowledged",
  attributes: [
    { key: "lease_uuid", value: `0190d4a0-0000-7001-8000-${String(i).padStart(12, "0")}`, index: true },
    { key: "provider_uuid", value: "0190d4a0-0000-7000-8000-0000000000aa", index: true },
  ],
}));

describe("SimulateResponse (our codec)", () => {
  it("reads the gas of a Simulate answer and skips its result", () => {
    const bytes = CosmjsSimulateResponse.encode(
      CosmjsSimulateResponse.fromPartial({
        gasInfo: { gasWanted: 0n, gasUsed: 123_456_789n },
        result: { data: new Uint8Array([1, 2, 3]), log: "ok", events, msgResponses: [] },
      }),
    ).finish();
    const read = SimulateResponse.decode(bytes);
    assert.equal(read.gasInfo?.gasUsed, 123_456_789n);
    assert.deepEqual(Object.keys(read), ["gasInfo"], "nothing of the result is kept");
  });

  it("finds the gas after the result, and reports none when the answer has none", () => {
    const result = CosmjsSimulateResponse.encode(
      CosmjsSimulateResponse.fromPartial({ result: { log: "x", events } }),
    ).finish();
    const gas = CosmjsSimulateResponse.encode(
      CosmjsSimulateResponse.fromPartial({ gasInfo: { gasWanted: 7n, gasUsed: 42n } }),
    ).finish();
    const reversed = new Uint8Array([...result, ...gas]);
    assert.equal(SimulateResponse.decode(reversed).gasInfo?.gasUsed, 42n);
    assert.equal(SimulateResponse.decode(result).gasInfo, undefined);
  });
});
