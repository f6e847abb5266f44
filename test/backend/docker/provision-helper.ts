import { randomUUID } from "node:crypto";
import { until } from "../../support/index.ts";
import type { Delivery, Receiver } from "../kit/receiver.ts";
import type { SignedClient } from "../kit/signed-client.ts";

/** Builds and sends provision requests the way providerd does, and waits for outcomes. */

export const TENANT = "manifest1dockertests00000000000000000000";
export const PROVIDER = "01234567-89ab-7def-8123-456789abcdef";

export interface ProvisionCall {
  lease: string;
  op: string;
  body: Record<string, unknown>;
}

export function provisionBody(
  rx: Receiver,
  payload: Uint8Array | undefined,
  items: unknown[],
  opts: { lease?: string; tenant?: string } = {},
): ProvisionCall {
  const lease = opts.lease ?? randomUUID();
  const op = randomUUID();
  const body: Record<string, unknown> = {
    lease_uuid: lease,
    tenant: opts.tenant ?? TENANT,
    provider_uuid: PROVIDER,
    items,
    callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
  };
  if (payload !== undefined) body.payload = Buffer.from(payload).toString("base64");
  return { lease, op, body };
}

/**
 * POSTs /provision (expects 202) and waits for this operation's callback (matched by lease
 * and operation id, so a re-provision of the same lease waits for its own); returns its body.
 */
export async function provisionAndWait(
  c: SignedClient,
  rx: Receiver,
  call: ProvisionCall,
  timeoutMs = 60_000,
): Promise<Record<string, unknown>> {
  const res = await c.post("/provision", call.body);
  if (res.status !== 202) throw new Error(`provision answered ${res.status}: ${res.text}`);
  const ours = (d: Delivery) =>
    d.route === "operation" && d.body.lease_uuid === call.lease && d.callbackId === call.op;
  await rx.waitFor((r) => r.deliveries.some(ours), timeoutMs);
  return rx.deliveries.find(ours)?.body ?? {};
}

/**
 * Waits until the backend's outbox has nothing left to deliver (its
 * `fred_backend_outbox_pending` gauge reads 0): a receiver having a callback does not yet
 * mean the backend recorded the delivery.
 */
export async function outboxDrained(baseUrl: string, timeoutMs = 30_000): Promise<void> {
  await until(
    async () =>
      /^fred_backend_outbox_pending(\{[^}]*\})? 0$/m.test(await (await fetch(`${baseUrl}/metrics`)).text()),
    "the backend outbox to drain (fred_backend_outbox_pending 0)",
    { timeoutMs, intervalMs: 50 },
  );
}
