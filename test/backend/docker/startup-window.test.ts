import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type Docker from "dockerode";
import pino from "pino";
import { LABEL } from "../../../src/backend/docker/names.ts";
import type { ContainerRow } from "../../../src/backend/docker/observe.ts";
import type { ServiceModel } from "../../../src/backend/docker/service-model.ts";
import { startAndVerify } from "../../../src/backend/docker/startup.ts";
import { SubstrateError } from "../../../src/backend/kit/index.ts";
import type { Clock } from "../../../src/core/clock.ts";

/**
 * The grace window of startup verification, over a scripted engine and a clock that moves
 * only when the code under test waits or the engine is slow: no wall time involved.
 */
function scriptedEngine(opts: { startTakesMs: number; exitsAfterMs: number }) {
  let now = 0;
  let startedAt: number | undefined;
  const clock: Clock = {
    now: () => now,
    setTimer: () => () => {},
    sleep: async (ms) => {
      now += ms;
    },
  };
  const docker = {
    getContainer: () => ({
      start: async () => {
        now += opts.startTakesMs; // a loaded engine: the start call itself takes this long
        startedAt = now;
      },
    }),
  } as unknown as Docker;
  const labels = { [LABEL.serviceName]: "app", [LABEL.instanceIndex]: "0" };
  const rowOf = (State: string, Status: string) =>
    ({ Id: "c1", State, Status, Labels: labels }) as unknown as ContainerRow;
  const row = (): ContainerRow => {
    if (startedAt === undefined) return rowOf("created", "Created");
    if (now - startedAt < opts.exitsAfterMs) return rowOf("running", "Up 1 second");
    return rowOf("exited", "Exited (3) 1 second ago");
  };
  return { clock, docker, list: async () => [row()] };
}

const app: ServiceModel = {
  name: "app",
  image: "fred-test/crashloop:1",
  ports: [],
  expose: [],
  env: {},
  labels: {},
  tmpfs: [],
  dependsOn: {},
};

const silentLogger = pino({ level: "silent" });

describe("docker backend: startup verification window", () => {
  it("opens after the last start: a slow start does not use up the window before the container runs", async () => {
    const engine = scriptedEngine({ startTakesMs: 2_000, exitsAfterMs: 500 });
    const verify = startAndVerify(
      {
        ...engine,
        startTimeoutMs: 10_000,
        verifyMs: 1_500,
        deadlineMs: 60_000,
        log: silentLogger,
      },
      [app],
      new AbortController().signal,
    );
    await assert.rejects(verify, (err: unknown) => {
      assert.ok(err instanceof SubstrateError);
      assert.equal(err.outcome, "definite");
      assert.equal(err.reason, "ContainerExited");
      return true;
    });
  });

  it("passes a container that keeps running through the whole window", async () => {
    const engine = scriptedEngine({ startTakesMs: 2_000, exitsAfterMs: 10_000 });
    await startAndVerify(
      { ...engine, startTimeoutMs: 10_000, verifyMs: 1_500, deadlineMs: 60_000, log: silentLogger },
      [app],
      new AbortController().signal,
    );
  });
});
