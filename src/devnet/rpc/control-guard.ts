/**
 * Who may call the devnet_* control methods (pause, produce a block, move time).
 *
 * A browser lets any web page send "simple" cross-origin requests (a GET, or a POST whose
 * Content-Type is text/plain or a form type) and open websockets to 127.0.0.1 without asking
 * the server first. So a control call is accepted only when it cannot have come from a page
 * the developer happens to have open:
 * - it is a JSON-RPC POST with `Content-Type: application/json` (a browser must send a CORS
 *   preflight first, which this server never answers with permission);
 * - it comes from a loopback address;
 * - its Host header names a loopback host (a DNS-rebinding page would name its own domain);
 * - it carries no Origin header, or one whose host is loopback.
 * URI (GET) requests and websocket frames never reach the control methods.
 */
import type { IncomingHttpHeaders } from "node:http";
import { isLoopbackHost, splitHostPort } from "../../core/host-port.ts";

export const CONTROL_REFUSED =
  "devnet_* methods are accepted only as a JSON-RPC POST with Content-Type: application/json from this machine";

/** Host part of a Host header or URL authority ("127.0.0.1:26657" → "127.0.0.1", "[::1]:1" → "::1"). */
function hostOf(authority: string): string {
  const a = authority.trim();
  return splitHostPort(a)?.host ?? a;
}

function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const mediaType = value.split(";")[0]?.trim().toLowerCase();
  return mediaType === "application/json";
}

function originIsLoopback(origin: string | undefined): boolean {
  if (origin === undefined) return true;
  try {
    return isLoopbackHost(hostOf(new URL(origin).host));
  } catch {
    return false;
  }
}

/** True when a POSTed JSON-RPC request may run the devnet_* control methods. */
export function controlAllowed(ip: string, headers: IncomingHttpHeaders): boolean {
  return (
    isLoopbackHost(ip) &&
    isJsonContentType(headers["content-type"]) &&
    headers.host !== undefined &&
    isLoopbackHost(hostOf(headers.host)) &&
    originIsLoopback(headers.origin)
  );
}
