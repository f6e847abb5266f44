import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { EngineEvent } from "../../../src/backend/kit/engine.ts";
import { SubstrateError, startBackend } from "../../../src/backend/kit/index.ts";
import { teardownFailure, VOLUME_CLEANUP_ATTEMPTS } from "../../../src/backend/kit/teardown-failure.ts";
import { MockSubstrate } from "../../../src/backend/mock/substrate.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { until } from "../../support/index.ts";
import { SECRET, SKU } from "../mock/helpers.ts";
import { signedClient } from "./signed-client.ts";

/**
 * A close whose teardown keeps failing: the closing lease shows why (CleanupFailed,
 * VolumeDeletionInProgress, then VolumeCleanupExhausted after the attempts), recovery keeps
 * retrying, and the close completes as soon as the teardown does.
 */
const volumeBusy = () =>
  new SubstrateError("ambiguous", "VolumeDeletionInProgress", "the lease's volume is still being deleted");

describe("teardownFailure", () => {
  it("a volume deletion is in progress until the attempts run out, then exhausted", () => {
    for (let n = 1; n < VOLUME_CLEANUP_ATTEMPTS; n++)
      assert.equal(teardownFailure(volumeBusy(), n).reason, "VolumeDeletionInProgress");
    const exhausted = teardownFailure(volumeBusy(), VOLUME_CLEANUP_ATTEMPTS);
    assert.equal(exhausted.reason, "VolumeCleanupExhausted");
    assert.match(exhausted.message, new RegExp(`after ${VOLUME_CLEANUP_ATTEMPTS} attempts`));
  });

  it("anything else is CleanupFailed, with none of the error's own text", () => {
    for (const err of [
      new Error("EACCES /var/lib/fred/secret"),
      new SubstrateError("ambiguous", "Internal", "internal error while provisioning"),
      "a string",
    ]) {
      const f = teardownFailure(err, 99);
      assert.equal(f.reason, "CleanupFailed");
      assert.doesNotMatch(f.message, /EACCES|internal error/);
    }
  });
});

/** Resolves at the engine's next `event` (for any lease). */
const once = (b: { engine: { on(l: (e: EngineEvent) => void): () => void } }, event: EngineEvent) =>
  new Promise<void>((resolve) => {
    const off = b.engine.on((e) => {
      if (e === event) {
        off();
        resolve();
      }
    });
  });

/** The mock, with a teardown that fails with `trouble` while it is set. */
class StuckTeardown extends MockSubstrate {
  trouble: unknown;
  attempts = 0;
  override async destroyLease(leaseUuid: string): Promise<void> {
    if (this.trouble !== undefined) {
      this.attempts++;
      throw this.trouble;
    }
    return super.destroyLease(leaseUuid);
  }
}

describe("a close whose teardown fails (kit over a mock substrate)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-teardown-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function closingLease(trouble: unknown) {
    const substrate = new StuckTeardown({
      clock: systemClock,
      backendName: "stuck",
      delayMs: 0,
      failRate: 0,
      failLeases: new Set(),
      hangLeases: new Set(),
    });
    const b = await startBackend({
      name: "stuck",
      substrate,
      journal: { path: join(dir, `${randomUUID()}.db`), mode: "bind-or-verify", storageId: randomUUID() },
      logger: createLogger("teardown-test", process.env.TEST_LOG_LEVEL ?? "silent"),
      secret: SECRET,
      listen: { host: "127.0.0.1", port: 0 },
      resolveSku: () => ({ cpu_cores: 0.1, memory_mb: 64, disk_mb: 0 }),
      pool: { totals: { cpuCores: 8, memoryMb: 8192, diskMb: 0 } },
      reconcileIntervalMs: 20,
    });
    const c = signedClient(b.url, SECRET);
    const lease = randomUUID();
    const op = randomUUID();
    const settled = once(b, "operation:settled");
    const res = await c.post("/provision", {
      lease_uuid: lease,
      tenant: "manifest1stuck",
      provider_uuid: randomUUID(),
      items: [{ sku: SKU, quantity: 1 }],
      callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${op}`,
    });
    assert.equal(res.status, 202, res.text);
    await settled;
    substrate.trouble = trouble;
    assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
    const provision = async () => (await c.get(`/provisions/${lease}`)).json as Record<string, unknown>;
    return { b, c, lease, substrate, provision };
  }

  it("a held volume deletion: in progress, then exhausted, then closed once it gives way", async () => {
    const { b, lease, substrate, provision } = await closingLease(volumeBusy());
    try {
      const first = await until(async () => {
        const p = await provision();
        return p.reason === "VolumeDeletionInProgress" ? p : undefined;
      }, "the closing lease shows its volume deletion");
      assert.equal(first.status, "deprovisioning");
      assert.match(String(first.message), /still being deleted/);

      const exhausted = await until(async () => {
        const p = await provision();
        return p.reason === "VolumeCleanupExhausted" ? p : undefined;
      }, "exhausted after the attempts");
      assert.ok(substrate.attempts >= VOLUME_CLEANUP_ATTEMPTS, `${substrate.attempts} attempts`);
      assert.equal(exhausted.status, "deprovisioning");

      // Retries go on past exhaustion: the deletion giving way completes the close.
      const before = substrate.attempts;
      await until(() => substrate.attempts > before + 1, "still retried after exhaustion");
      const closed = once(b, "close:done");
      substrate.trouble = undefined;
      await closed;
      const gone = await until(async () => {
        const res = await signedClient(b.url, SECRET).get(`/provisions/${lease}`);
        return res.status === 404 ? res : undefined;
      }, "the closed lease is no longer provisioned");
      assert.equal(gone.status, 404);
    } finally {
      await b.close();
    }
  });

  it("any other teardown failure shows CleanupFailed, without the substrate's text", async () => {
    const { b, provision } = await closingLease(new Error("docker: EACCES /var/run/docker.sock"));
    try {
      const p = await until(async () => {
        const v = await provision();
        return v.reason === "CleanupFailed" ? v : undefined;
      }, "the closing lease shows CleanupFailed");
      assert.equal(p.status, "deprovisioning");
      assert.doesNotMatch(JSON.stringify(p), /EACCES|docker\.sock/);
    } finally {
      await b.close();
    }
  });
});
