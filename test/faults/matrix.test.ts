import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ROWS, type Row } from "../../src/core/reconcile/index.ts";
import { MATRIX, type ProcessTest, SITUATIONS } from "./matrix.ts";

/**
 * The fault suite's map of the State Matrix: every row of the seed's table has an entry,
 * every named test exists under its exact title, and a row without a real-process test
 * says why. The table is printed, so a run shows which rows run end to end.
 */
const ROOT = join(import.meta.dirname, "..", "..");

function exists(t: ProcessTest): boolean {
  const text = readFileSync(join(ROOT, t.file), "utf8");
  return text.includes(`"${t.test}"`) || text.includes(`\`${t.test}\``);
}

describe("faults: the State Matrix map", () => {
  it("maps every row to a real-process test, or says why it is plan-only", (t) => {
    const rows = Object.keys(ROWS) as Row[];
    assert.deepEqual(Object.keys(MATRIX).sort(), [...rows].sort(), "one entry per row, no stale ones");
    for (const row of rows) {
      const entry = MATRIX[row];
      if ("process" in entry) assert.ok(exists(entry.process), `${row}: no test "${entry.process.test}"`);
      else assert.ok(entry.why.length > 0, `${row}: a plan-only row says why`);
      t.diagnostic(
        `${ROWS[row]} → ${"process" in entry ? `${entry.process.file}: ${entry.process.test}` : `(${entry.why})`}`,
      );
    }
  });

  it("names an existing test for every situation the issue lists", () => {
    for (const [situation, test] of Object.entries(SITUATIONS))
      assert.ok(exists(test), `${situation}: no test "${test.test}" in ${test.file}`);
  });
});
