import { FredError } from "./errors.ts";

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
