import { posix } from "node:path";

/**
 * The one spelling of a Unix socket address in our configuration and ready lines:
 * `unix:` followed by an absolute path, e.g. `unix:/run/fred/docker-backend.sock`. A
 * backend's listen address and providerd's `backends[].url` both use it, so the URL a
 * backend prints is the one providerd's config takes. `unix://…` is refused rather than
 * read as a second spelling: its host part (`unix://host/path`) means nothing here.
 */
export const UNIX_PREFIX = "unix:";

/** sun_path holds 108 bytes on Linux, its terminating NUL included. */
export const MAX_SOCKET_PATH_BYTES = 107;

export type UnixAddressCheck = { ok: true; path: string } | { ok: false; problem: string };

/** Whether `text` is meant as a Unix socket address (it may still be malformed). */
export function isUnixAddress(text: string): boolean {
  return text.toLowerCase().startsWith(UNIX_PREFIX);
}

export function unixAddress(path: string): string {
  return `${UNIX_PREFIX}${path}`;
}

/** `unix:/abs/path` → the path; a problem is a predicate the caller puts the key's name before. */
export function parseUnixAddress(text: string): UnixAddressCheck {
  const example = "e.g. unix:/run/fred/backend.sock";
  if (!text.startsWith(UNIX_PREFIX))
    return { ok: false, problem: `must be ${UNIX_PREFIX} followed by an absolute path (${example})` };
  const path = text.slice(UNIX_PREFIX.length);
  if (path.startsWith("//"))
    return {
      ok: false,
      problem: `must be ${UNIX_PREFIX} followed by an absolute path with one leading slash (${example}), not a unix:// URL`,
    };
  if (!path.startsWith("/"))
    return { ok: false, problem: `must name an absolute socket path (${example}), not a relative one` };
  if (/[\x00-\x1f\x7f]/.test(path))
    return { ok: false, problem: "socket path must not contain control characters" };
  if (path.endsWith("/") || posix.normalize(path) !== path)
    return {
      ok: false,
      problem: 'socket path must be normalized: no empty, "." or ".." segments and no trailing slash',
    };
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES)
    return {
      ok: false,
      problem: `socket path must be at most ${MAX_SOCKET_PATH_BYTES} bytes (the kernel's limit for a socket address)`,
    };
  return { ok: true, path };
}
