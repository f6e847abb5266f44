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
