import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { alertsNow, IN_PROCESS_RULES } from "../../../src/provider/dashboard/alerts-now.ts";
import { REPO_ROOT } from "../../support/index.ts";

/**
 * The overview's "alerts that would fire now": every rule evaluated in process exists in
 * deploy/prometheus/fred-alerts.yml with the same severity, and each fires exactly when
 * its condition holds.
 */
interface Rule {
  alert?: string;
  labels?: { severity?: string };
}
const file = parse(readFileSync(join(REPO_ROOT, "deploy/prometheus/fred-alerts.yml"), "utf8")) as {
  groups: { rules: Rule[] }[];
};
const rules = new Map(
  file.groups.flatMap((g) => g.rules).flatMap((r) => (r.alert === undefined ? [] : [[r.alert, r] as const])),
);

const NOW = Date.UTC(2026, 0, 1, 12);
const calm = {
  nowMs: NOW,
  startedAtMs: NOW - 3_600_000,
  lastBlockAtMs: NOW - 5_000,
  backendHealthy: new Map([
    ["a", true],
    ["b", true],
  ]),
  lastSweepSuccessAtMs: NOW - 60_000,
};

describe("alerts evaluated in process", () => {
  it("each one is a rule of deploy/prometheus/fred-alerts.yml with the same severity", () => {
    for (const [name, severity] of Object.entries(IN_PROCESS_RULES)) {
      assert.ok(rules.has(name), `${name} is not in fred-alerts.yml`);
      assert.equal(rules.get(name)?.labels?.severity, severity, name);
    }
  });

  it("none fires when the feed is live, every backend answers and sweeps complete", () => {
    assert.deepEqual(alertsNow(calm), []);
  });

  it("FredChainFeedStalled past 120 s without a block (never before the first block)", () => {
    assert.deepEqual(alertsNow({ ...calm, lastBlockAtMs: NOW - 120_000 }), []);
    assert.deepEqual(
      alertsNow({ ...calm, lastBlockAtMs: NOW - 121_000 }).map((a) => [a.name, a.severity]),
      [["FredChainFeedStalled", "page"]],
    );
    assert.deepEqual(alertsNow({ ...calm, lastBlockAtMs: 0 }), []);
  });

  it("FredBackendUnhealthy once per backend that did not answer or is fenced", () => {
    const fired = alertsNow({
      ...calm,
      backendHealthy: new Map([
        ["a", true],
        ["b", false],
      ]),
    });
    assert.deepEqual(
      fired.map((a) => [a.name, a.summary]),
      [["FredBackendUnhealthy", "backend b is unhealthy or fenced"]],
    );
  });

  it("FredReconcilerNotSucceeding after 15 minutes without a complete sweep (counted from start before the first)", () => {
    assert.deepEqual(alertsNow({ ...calm, lastSweepSuccessAtMs: NOW - 900_000 }), []);
    assert.deepEqual(
      alertsNow({ ...calm, lastSweepSuccessAtMs: NOW - 901_000 }).map((a) => a.name),
      ["FredReconcilerNotSucceeding"],
    );
    assert.deepEqual(alertsNow({ ...calm, lastSweepSuccessAtMs: undefined, startedAtMs: NOW - 60_000 }), []);
    assert.deepEqual(
      alertsNow({ ...calm, lastSweepSuccessAtMs: undefined, startedAtMs: NOW - 1_000_000 }).map(
        (a) => a.name,
      ),
      ["FredReconcilerNotSucceeding"],
    );
  });
});
