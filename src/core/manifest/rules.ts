import { FredError } from "../errors.ts";
import { MANIFEST_LIMITS } from "./limits.ts";

/**
 * The per-field rules of a tenant manifest as small pure functions. Each returns a
 * problem message, or undefined when the value is fine; the zod schema attaches them to
 * the right field so every problem gets its own JSON pointer. The cross-service
 * `depends_on` rules come last: they judge the graph of a whole stack.
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

// Across services: depends_on.

/**
 * Cross-service `depends_on` rules of a stack (fred-wire §3.4): targets exist, nobody
 * depends on itself, `service_healthy` needs an active health check on the target, no
 * cycles, and no chain longer than the depth limit (diamonds are fine).
 *
 * Go walks its map in random order, so its depth check depends on where the walk starts;
 * here depth is the longest chain of edges, which gives the same answer every time.
 */

export interface DependencyNode {
  /** Dependency target → condition text as written (may be invalid; that is the schema's job). */
  dependsOn: ReadonlyMap<string, unknown>;
  hasActiveHealthCheck: boolean;
}

export interface DependencyProblem {
  /** Path below `/services`: [service] or [service, "depends_on", target]. */
  path: string[];
  message: string;
}

export function checkDependencies(services: ReadonlyMap<string, DependencyNode>): DependencyProblem[] {
  const problems: DependencyProblem[] = [];
  const edges = new Map<string, string[]>();
  for (const [name, node] of services) {
    const usable: string[] = [];
    for (const [target, condition] of node.dependsOn) {
      const path = [name, "depends_on", target];
      if (target === name) {
        problems.push({ path, message: "a service cannot depend on itself" });
        continue;
      }
      const targetNode = services.get(target);
      if (targetNode === undefined) {
        problems.push({ path, message: `depends on unknown service ${JSON.stringify(target)}` });
        continue;
      }
      if (condition === "service_healthy" && !targetNode.hasActiveHealthCheck) {
        problems.push({
          path,
          message: `condition service_healthy needs a health_check on ${JSON.stringify(target)} (not NONE)`,
        });
      }
      usable.push(target);
    }
    edges.set(name, usable);
  }
  problems.push(...checkGraphShape(edges));
  return problems;
}

/** Cycles and over-long chains, each reported once, in a deterministic order. */
function checkGraphShape(edges: ReadonlyMap<string, string[]>): DependencyProblem[] {
  const problems: DependencyProblem[] = [];
  const state = new Map<string, "visiting" | "done">();
  /** Longest chain (in edges) starting at a node; only known for nodes off every cycle. */
  const depth = new Map<string, number>();
  const stack: string[] = [];
  let depthReported = false;

  const visit = (name: string): number => {
    const seen = state.get(name);
    if (seen === "done") return depth.get(name) ?? 0;
    if (seen === "visiting") return 0; // the caller reports the cycle
    state.set(name, "visiting");
    stack.push(name);
    let longest = 0;
    for (const target of edges.get(name) ?? []) {
      if (state.get(target) === "visiting") {
        const cycle = [...stack.slice(stack.indexOf(target)), target];
        problems.push({
          path: [name, "depends_on", target],
          message: `depends_on cycle: ${cycle.join(" -> ")}`,
        });
        continue;
      }
      longest = Math.max(longest, visit(target) + 1);
    }
    stack.pop();
    state.set(name, "done");
    depth.set(name, longest);
    if (longest > MANIFEST_LIMITS.maxDependencyDepth && !depthReported) {
      depthReported = true;
      problems.push({
        path: [name],
        message: `depends_on chain starting at ${JSON.stringify(name)} is ${longest} deep; at most ${MANIFEST_LIMITS.maxDependencyDepth} is allowed`,
      });
    }
    return longest;
  };

  for (const name of [...edges.keys()].sort()) visit(name);
  return problems;
}

// Image references.

/**
 * Image references → registry domain, normalised the way Docker does it: a first path
 * component is a registry only when it looks like a host (has a dot or a port, or is
 * "localhost"); otherwise the image lives on docker.io. Shared by the backends' registry
 * allowlist and the manifest's `credentials.host` rule, so both read a reference alike.
 */
export const DEFAULT_REGISTRY = "docker.io";
// name components, optional :tag, optional @digest (Docker's reference grammar, simplified).
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$/;
const DOMAIN =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::\d{1,5})?$/;

/** An image reference that does not parse; its message is tenant-safe (it quotes only the reference). */
export class ImageReferenceError extends FredError<"ERR_IMAGE_REFERENCE"> {
  constructor(message: string) {
    super("ERR_IMAGE_REFERENCE", message);
    this.name = "ImageReferenceError";
  }
}

/**
 * An image reference without its tag or digest: `name[:tag][@digest]` → `name`. A port in
 * the registry part is not a tag (`127.0.0.1:5000/app` stays whole). No validation: for
 * references already accepted (`parseRegistry`) or reported by the engine.
 */
export function imageRepository(ref: string): string {
  const at = ref.indexOf("@");
  const named = at < 0 ? ref : ref.slice(0, at);
  const colon = named.lastIndexOf(":");
  return colon > named.lastIndexOf("/") ? named.slice(0, colon) : named;
}

export function parseRegistry(image: string): string {
  if (typeof image !== "string" || image === "") throw new ImageReferenceError("image is required");
  if (image.length > 4096) throw new ImageReferenceError("image reference is too long");
  let rest = image;
  const at = rest.indexOf("@");
  if (at >= 0) {
    if (!DIGEST.test(rest.slice(at + 1)))
      throw new ImageReferenceError(`invalid digest in image ${JSON.stringify(image)}`);
    rest = rest.slice(0, at);
  }
  const slash = rest.indexOf("/");
  let domain = DEFAULT_REGISTRY;
  let path = rest;
  if (slash >= 0) {
    const first = rest.slice(0, slash);
    if (first.includes(".") || first.includes(":") || first === "localhost") {
      if (!DOMAIN.test(first))
        throw new ImageReferenceError(`invalid registry in image ${JSON.stringify(image)}`);
      domain = first;
      path = rest.slice(slash + 1);
    }
  }
  const colon = path.lastIndexOf(":");
  if (colon >= 0) {
    if (!TAG.test(path.slice(colon + 1)))
      throw new ImageReferenceError(`invalid tag in image ${JSON.stringify(image)}`);
    path = path.slice(0, colon);
  }
  if (path === "" || !path.split("/").every((c) => COMPONENT.test(c))) {
    throw new ImageReferenceError(`invalid repository name in image ${JSON.stringify(image)}`);
  }
  // Docker's legacy alias: index.docker.io is docker.io.
  return domain === "index.docker.io" ? DEFAULT_REGISTRY : domain;
}

/**
 * A registry host as a manifest's `credentials.host` names it: a domain with an optional
 * port (no scheme, no path), compared the way `parseRegistry` reports domains.
 * Undefined when `host` is not one.
 */
export function registryHost(host: string): string | undefined {
  if (!DOMAIN.test(host)) return undefined;
  return host === "index.docker.io" ? DEFAULT_REGISTRY : host;
}
