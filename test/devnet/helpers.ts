/**
 * What the devnet's own tests add to the shared handle (test/support/devnet.ts): a raw
 * JSON-RPC call that returns the whole reply, errors included, and the cosmjs reconnect fix.
 */
import { ReconnectingSocket } from "@cosmjs/socket";

let nextId = 1;

// biome-ignore lint/suspicious/noExplicitAny: replies are arbitrary JSON, asserted field by field in tests.
export async function rpc(url: string, method: string, params: unknown = {}): Promise<any> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
  });
  return res.json();
}

/**
 * cosmjs 0.39's ReconnectingSocket schedules a reconnect whenever its socket reports
 * "disconnected", even after an explicit disconnect(); once the devnet is gone it retries
 * forever and the test process never exits. After disconnect() we make those retries no-ops.
 */
export function stopCosmjsReconnectsAfterDisconnect(): void {
  type Internals = { socket: { reconnect(): void }; reconnectTimeout: NodeJS.Timeout | null };
  const proto = ReconnectingSocket.prototype as unknown as { disconnect(): void; __fredPatched?: true };
  if (proto.__fredPatched) return;
  const original = proto.disconnect;
  proto.disconnect = function (this: Internals) {
    original.call(this);
    this.socket.reconnect = () => {};
    if (this.reconnectTimeout) clearTimeout(this.reconnectTimeout);
  };
  proto.__fredPatched = true;
}
