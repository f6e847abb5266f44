import { isIP } from "node:net";

/**
 * The one reader of `host:port` text: listen addresses (`127.0.0.1:8080`, `[::1]:0`,
 * `:8080`), URL authorities and Host headers. It splits; each caller judges what it got
 * (a listener wants a number, a URL check wants an IP literal inside brackets).
 * undefined: a `[` without its `]`, or text after the `]` that is not `:port`.
 */
export interface HostPort {
  /** Without brackets. */
  host: string;
  /** The text after the last colon (after `]` for a bracketed host); undefined when none. */
  port: string | undefined;
  /** The host was written as `[v6]`. */
  bracketed: boolean;
}

export function splitHostPort(text: string): HostPort | undefined {
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0) return undefined;
    const tail = text.slice(close + 1);
    if (tail !== "" && !tail.startsWith(":")) return undefined;
    return { host: text.slice(1, close), port: tail === "" ? undefined : tail.slice(1), bracketed: true };
  }
  const colon = text.lastIndexOf(":");
  if (colon < 0) return { host: text, port: undefined, bracketed: false };
  return { host: text.slice(0, colon), port: text.slice(colon + 1), bracketed: false };
}

/**
 * A listen address: `host:port`, `:port` (all interfaces) or `[v6]:port`, with a decimal
 * port in 0–65535. undefined for anything else, such as a missing port or an IPv6 address
 * without its brackets (its last group would read as the port).
 */
export function listenAddress(text: string): { host: string; port: number } | undefined {
  const split = splitHostPort(text);
  if (split === undefined || split.port === undefined || !/^\d{1,5}$/.test(split.port)) return undefined;
  const port = Number(split.port);
  if (port > 65_535) return undefined;
  if (split.bracketed ? isIP(split.host) !== 6 : /[:[\]]/.test(split.host)) return undefined;
  return { host: split.host, port };
}

/**
 * The one loopback rule: whether `host` (a name or an IP literal, brackets allowed, as
 * from a URL, a Host header or a socket's remote address) can only mean this machine:
 * `localhost`, 127.0.0.0/8, `::1`, or 127.x mapped into IPv6. Callers allow things on
 * it (plain HTTP, an unauthenticated admin API, devnet control), so it is narrow: a name
 * under `.localhost` is not loopback here, since outside a browser the system resolver
 * may send it to DNS like any other name.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) !== 6) return false;
  const mapped = /^(?:0:0:0:0:0:|::)ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h)?.[1];
  if (mapped !== undefined) return mapped.startsWith("127.");
  return h === "::1" || h === "0:0:0:0:0:0:0:1";
}
