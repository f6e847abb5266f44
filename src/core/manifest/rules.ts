/**
 * The per-field rules of a tenant manifest as small pure functions. Each returns a
 * problem message, or undefined when the value is fine; the zod schema attaches them to
 * the right field so every problem gets its own JSON pointer.
 */

/**
 * A regex source matching `literal` with ASCII letters in either case. JSON Schema drops
 * regex flags, so case-insensitivity has to be spelled out in the pattern itself.
 */
export function caseInsensitive(literal: string): string {
  let out = "";
  for (const ch of literal) {
    const lower = ch.toLowerCase();
    const upper = ch.toUpperCase();
    if (lower !== upper) out += `[${lower}${upper}]`;
    else out += /[\\^$.*+?()[\]{}|/-]/.test(ch) ? `\\${ch}` : ch;
  }
  return out;
}

/**
 * Decimal integer the way Go's strconv.Atoi reads it (optional sign, digits, leading zeros
 * allowed). Returns undefined for anything else; huge values come back out of port range.
 */
export function goAtoi(text: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(text)) return undefined;
  return Number(text);
}

function isPortNumber(n: number | undefined): n is number {
  return n !== undefined && n >= 1 && n <= 65535;
}

export interface PortKey {
  port: number;
  protocol: "tcp" | "udp";
}

/** Reads a `ports` key such as "80/tcp" (protocol case-insensitive, as Go accepts "80/TCP"). */
export function parsePortKey(key: string): PortKey | string {
  const parts = key.split("/");
  if (parts.length !== 2) return 'port must be written "<port>/<protocol>", e.g. "80/tcp"';
  const port = goAtoi(parts[0] as string);
  if (port === undefined) return "port must be a number";
  if (!isPortNumber(port)) return "port must be between 1 and 65535";
  const protocol = (parts[1] as string).toLowerCase();
  if (protocol !== "tcp" && protocol !== "udp") return 'protocol must be "tcp" or "udp"';
  return { port, protocol };
}

/** One `expose` entry: a port number written as a string. */
export function exposeProblem(entry: string): string | undefined {
  const port = goAtoi(entry);
  if (port === undefined) return `${JSON.stringify(entry)} is not a port number`;
  if (!isPortNumber(port)) return "port must be between 1 and 65535";
  return undefined;
}

/** Lexical clean of a slash-separated path with Go's path.Clean semantics. */
export function cleanPath(path: string): string {
  if (path === "") return ".";
  const rooted = path.startsWith("/");
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!rooted) out.push("..");
      continue;
    }
    out.push(part);
  }
  const joined = out.join("/");
  if (rooted) return `/${joined}`;
  return joined === "" ? "." : joined;
}

/** The backend mounts its own tmpfs here; the kernel filesystems must never be masked. */
const BACKEND_TMPFS = new Set(["/tmp", "/run"]);
const KERNEL_PATHS = ["/proc", "/sys", "/dev"];

/** A tmpfs mount path, judged after cleaning. Duplicates are checked by the caller. */
export function tmpfsProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return "tmpfs path must be absolute";
  const cleaned = cleanPath(path);
  if (cleaned === "/") return "tmpfs cannot replace the root filesystem";
  if (BACKEND_TMPFS.has(cleaned)) return `${cleaned} is already a tmpfs managed by the backend`;
  for (const kernel of KERNEL_PATHS) {
    if (cleaned === kernel || cleaned.startsWith(`${kernel}/`))
      return `tmpfs may not be mounted on or under ${kernel}`;
  }
  return undefined;
}

/** `health_check.test`: Docker's exec form, shell form, or NONE alone. */
export function healthTestProblem(test: readonly string[]): string | undefined {
  const kind = test[0];
  if (kind === undefined) return "health_check.test must not be empty";
  if (kind === "CMD" || kind === "CMD-SHELL") {
    return test.length < 2 ? `${kind} needs at least one more element (the command)` : undefined;
  }
  if (kind === "NONE") return test.length === 1 ? undefined : "NONE must be the only element";
  return 'health_check.test must start with "CMD", "CMD-SHELL" or "NONE"';
}
