import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { RunningBackend } from "../../../../src/backend/kit/index.ts";
import { loadMockBackendConfig } from "../../../../src/backend/mock/config.ts";
import { startMockBackend } from "../../../../src/backend/mock/main.ts";
import { ManualClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";
import { until } from "../../../support/index.ts";
import { manifest, SECRET, SKU } from "../../mock/helpers.ts";
import type { Delivery, Receiver } from "../receiver.ts";
import { type SignedClient, signedClient } from "../signed-client.ts";

/**
 * A mock backend in process on a ManualClock (real HTTP, real SQLite journal), so a
 * restart or update can be held mid-way by MOCK_BACKEND_DELAY and released by advancing
 * time, and release expiry can be observed without waiting.
 */
export const PROVIDER = "01234567-89ab-7def-8123-456789abcdef";
export const IMAGE = "docker.io/library/nginx:1.25";

export interface Harness {
  b: RunningBackend;
  c: SignedClient;
  clock: ManualClock;
  /** Advances time 1 s per poll until `cond` holds (a held substrate step completes). */
  drive(cond: () => boolean, what: string): Promise<unknown>;
  /** Provisions a lease with a one-service manifest (or `payload`) and drives it to ready; returns its lifecycle URL. */
  ready(lease: string, payload?: Uint8Array): Promise<string>;
  restart(lease: string, id: string, admittedAt?: string, url?: string): ReturnType<SignedClient["post"]>;
  update(
    lease: string,
    id: string,
    image: string,
    admittedAt?: string,
    url?: string,
  ): ReturnType<SignedClient["post"]>;
  close(): Promise<void>;
}

export async function startHarness(
  rx: Receiver,
  env: Record<string, string> = {},
  clock = new ManualClock(Date.now()),
): Promise<Harness> {
  const config = loadMockBackendConfig({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_NAME: "mock-maintenance",
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    MOCK_BACKEND_DELAY: "1s",
    ...env,
  });
  const b = await startMockBackend(config, {
    logger: createLogger("maintenance-test", process.env.TEST_LOG_LEVEL ?? "silent"),
    clock,
  });
  const c = signedClient(b.url, SECRET, () => clock.now());
  const urls = new Map<string, string>();
  const drive = (cond: () => boolean, what: string) =>
    until(
      () => {
        if (cond()) return true;
        clock.advance(1_000);
        return false;
      },
      what,
      { intervalMs: 5 },
    );
  const h: Harness = {
    b,
    c,
    clock,
    drive,
    async ready(lease, payload = manifest("web", IMAGE)) {
      const op = randomUUID();
      const res = await c.post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1maintenance",
        provider_uuid: PROVIDER,
        items: [{ sku: SKU, quantity: 1, service_name: "web" }],
        callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
        payload: Buffer.from(payload).toString("base64"),
      });
      assert.equal(res.status, 202, res.text);
      await drive(() => b.journal.getLease(lease)?.status === "ready", "the provision to be ready");
      const url = `${rx.url}/callbacks/provision?lifecycle_id=${op}`;
      urls.set(lease, url);
      return url;
    },
    restart: (lease, id, admittedAt, url) =>
      c.post("/restart", {
        lease_uuid: lease,
        maintenance_id: id,
        callback_url: url ?? urls.get(lease),
        ...(admittedAt === undefined ? {} : { admitted_at: admittedAt }),
      }),
    update: (lease, id, image, admittedAt, url) =>
      c.post("/update", {
        lease_uuid: lease,
        maintenance_id: id,
        callback_url: url ?? urls.get(lease),
        payload: Buffer.from(manifest("web", image)).toString("base64"),
        ...(admittedAt === undefined ? {} : { admitted_at: admittedAt }),
      }),
    close: () => b.close(),
  };
  return h;
}

/** The maintenance completions the receiver got for command `id`. */
export function completions(rx: Receiver, id: string): Delivery[] {
  return rx.deliveries.filter((d) => d.body.maintenance_id === id);
}

/** An RFC 3339 stamp `n` microseconds into a fixed day (strictly increasing with n). */
export function stamp(n: number): string {
  return `2026-12-01T10:00:00.${String(n).padStart(6, "0")}Z`;
}
