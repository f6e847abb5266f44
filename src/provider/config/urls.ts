import { isIP } from "node:net";
import { isLoopbackHost, splitHostPort } from "../../core/host-port.ts";
import { isUnixAddress, parseUnixAddress, unixAddress } from "../../core/unix-address.ts";

/**
 * URL rules for backend origins and the callback base URL. We parse the raw text
 * ourselves instead of trusting WHATWG normalisation, because the rules are about what
 * the operator wrote: an empty "?" or "#", user info, or an encoded separator must be
 * refused, not silently cleaned away. A problem is a predicate ("must not contain user
 * info"); the caller puts the key's name in front.
 */
export interface ParsedAuthority {
  scheme: "http" | "https";
  /** Hostname as written (brackets stripped for IPv6), lower-cased. */
  host: string;
  port: number | undefined;
  /** scheme://authority as written, lower-cased scheme and host. */
  origin: string;
  /** Everything after the authority: path, query and fragment as written. */
  rest: string;
}

export type UrlCheck<T> = { ok: true; value: T } | { ok: false; problem: string };

const ABSOLUTE_URL = "must be an absolute http:// or https:// URL";
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const HOST_CHARS = /^[A-Za-z0-9._-]+$/;

export function parseAuthority(text: string): UrlCheck<ParsedAuthority> {
  const m = SCHEME.exec(text);
  const scheme = m?.[1]?.toLowerCase();
  if (!m || (scheme !== "http" && scheme !== "https")) {
    return { ok: false, problem: ABSOLUTE_URL };
  }
  const afterScheme = text.slice(m[0].length);
  const end = afterScheme.search(/[/?#]/);
  const authority = end < 0 ? afterScheme : afterScheme.slice(0, end);
  const rest = end < 0 ? "" : afterScheme.slice(end);
  if (authority.includes("@")) return { ok: false, problem: `must not contain user info` };
  const split = splitHostPort(authority);
  if (split === undefined) return { ok: false, problem: `has an invalid hostname` };
  const { host: hostPart, port: portPart } = split;
  if (split.bracketed) {
    if (isIP(hostPart) !== 6) return { ok: false, problem: `has an invalid hostname` };
  } else {
    if (hostPart === "" || /^\.+$/.test(hostPart)) return { ok: false, problem: `must have a hostname` };
    if (/[^\x00-\x7f]/.test(hostPart)) {
      return {
        ok: false,
        problem: `hostname must be ASCII (use punycode for internationalized names)`,
      };
    }
    if (!HOST_CHARS.test(hostPart) || hostPart.includes("..")) {
      return { ok: false, problem: `has an invalid hostname` };
    }
  }
  let port: number | undefined;
  if (portPart !== undefined) {
    port = /^\d{1,5}$/.test(portPart) ? Number(portPart) : Number.NaN;
    if (!(port >= 1 && port <= 65535)) {
      return { ok: false, problem: `port must be a number between 1 and 65535` };
    }
  }
  const host = hostPart.toLowerCase();
  const hostText = isIP(host) === 6 ? `[${host}]` : host;
  const origin = `${scheme}://${hostText}${port === undefined ? "" : `:${port}`}`;
  return { ok: true, value: { scheme, host, port, origin, rest } };
}

/**
 * Where providerd reaches a backend: an http(s) origin, or a Unix socket for a backend on
 * the same host (`unix:/run/fred/docker-backend.sock`, src/core/unix-address.ts).
 */
export interface BackendOrigin {
  scheme: "http" | "https" | "unix";
  /** Lower-cased hostname; "" for a socket. */
  host: string;
  /** `scheme://authority` as written (lower-cased), or `unix:/path` for a socket. */
  origin: string;
  /** The socket's absolute path; "" for an http(s) origin. */
  socketPath: string;
}

/** A backend URL: an origin only (a single trailing "/" is tolerated), or `unix:/absolute/path`. */
export function parseBackendOrigin(text: string): UrlCheck<BackendOrigin> {
  if (isUnixAddress(text)) {
    const unix = parseUnixAddress(text);
    if (!unix.ok) return unix;
    return {
      ok: true,
      value: { scheme: "unix", host: "", origin: unixAddress(unix.path), socketPath: unix.path },
    };
  }
  const parsed = parseAuthority(text);
  if (!parsed.ok) {
    return parsed.problem === ABSOLUTE_URL
      ? { ok: false, problem: `must be an absolute http:// or https:// URL, or unix:/absolute/socket/path` }
      : parsed;
  }
  if (parsed.value.rest !== "" && parsed.value.rest !== "/") {
    return { ok: false, problem: `must be an origin with no path, query or fragment` };
  }
  const { scheme, host, origin } = parsed.value;
  return { ok: true, value: { scheme, host, origin, socketPath: "" } };
}

export interface CallbackBase {
  origin: string;
  scheme: "http" | "https";
  host: string;
  /** Canonical escaped path without trailing slash; "" for a root URL. */
  path: string;
  /** Raw query without "?", preserved byte for byte; "" when absent. */
  query: string;
}

const RESERVED_QUERY_KEYS = new Set(["operation_id", "lifecycle_id"]);
const PERCENT = /%(?![0-9A-Fa-f]{2})/;
// Characters that must already be percent-encoded in a query we sign byte for byte.
const UNSAFE_QUERY = /[\x00-\x20"<>\\^`{|}\x7f-\uffff]/;

export function parseCallbackBase(text: string): UrlCheck<CallbackBase> {
  const parsed = parseAuthority(text);
  if (!parsed.ok) return parsed;
  let rest = parsed.value.rest;
  if (rest.includes("#")) return { ok: false, problem: `must not contain a fragment` };
  let query = "";
  const q = rest.indexOf("?");
  if (q >= 0) {
    query = rest.slice(q + 1);
    rest = rest.slice(0, q);
    if (query === "") return { ok: false, problem: `must not end with an empty "?"` };
    if (UNSAFE_QUERY.test(query) || PERCENT.test(query) || query.includes(";")) {
      return { ok: false, problem: `query is malformed or not percent-encoded` };
    }
    for (const part of query.split("&")) {
      if (part === "") return { ok: false, problem: `query is malformed or not percent-encoded` };
      const key = decodeURIComponent(part.split("=")[0]!.replace(/\+/g, " "));
      if (RESERVED_QUERY_KEYS.has(key)) {
        return { ok: false, problem: `must not carry an operation_id or lifecycle_id query key` };
      }
    }
  }
  if (rest.includes("\\")) return { ok: false, problem: `path must not contain backslashes` };
  if (/%(2f|5c)/i.test(rest)) {
    return { ok: false, problem: `path must not contain percent-encoded separators` };
  }
  if (PERCENT.test(rest)) return { ok: false, problem: `path has an invalid percent-escape` };
  const trimmed = rest.replace(/\/+$/, "");
  if (trimmed !== "") {
    const segments = trimmed.slice(1).split("/");
    if (segments.some((s) => s === "" || s === "." || s === "..")) {
      return { ok: false, problem: `path must not contain empty, "." or ".." segments` };
    }
  }
  const path = trimmed
    .split("/")
    .map((s) => canonicalSegment(s))
    .join("/");
  const { origin, scheme, host } = parsed.value;
  return { ok: true, value: { origin, scheme, host, path, query } };
}

/** Decodes escapes of characters that need none and upper-cases the rest, so one path has one spelling. */
function canonicalSegment(segment: string): string {
  return segment.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const ch = String.fromCharCode(Number.parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
}

/**
 * Addresses production mode refuses as a peer: loopback, names under `.localhost` (meant
 * for this machine even where the resolver does not say so), link-local, unspecified.
 */
export function isLocalOnlyHost(host: string): boolean {
  if (isLoopbackHost(host) || host.toLowerCase().endsWith(".localhost")) return true;
  if (isIP(host) === 4) return host.startsWith("169.254.") || host === "0.0.0.0";
  if (isIP(host) === 6) return host === "::" || /^fe[89ab]/i.test(host);
  return false;
}
