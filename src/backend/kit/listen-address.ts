import { listenAddress } from "../../core/host-port.ts";
import { isUnixAddress, parseUnixAddress } from "../../core/unix-address.ts";
import type { ListenAddress } from "./backend.ts";

/**
 * A backend's listen address, as every backend kind reads it: `host:port`, `:port` (all
 * interfaces), `[v6]:port`, or `unix:/absolute/path` for a backend co-located with
 * providerd. A problem is a predicate; the caller puts the key's name in front.
 */
export function parseBackendListen(
  text: string,
): { ok: true; value: ListenAddress } | { ok: false; problem: string } {
  if (isUnixAddress(text)) {
    const unix = parseUnixAddress(text);
    return unix.ok ? { ok: true, value: { socketPath: unix.path } } : unix;
  }
  const tcp = listenAddress(text);
  if (tcp === undefined) return { ok: false, problem: "is not host:port (or unix:/absolute/socket/path)" };
  return { ok: true, value: tcp };
}

/** Names the TLS keys a backend refuses beside a socket listener (TLS on a local socket protects nothing). */
export function tlsOnSocketProblem(keys: readonly string[]): string {
  return `${keys.join(" and ")} cannot be used with a unix: listen address (the socket is local by construction and its file mode decides who connects; TLS over it protects nothing)`;
}
