import { parseRegistry } from "../../core/image-reference.ts";

export { ImageReferenceError, parseRegistry } from "../../core/image-reference.ts";

/**
 * The operator's registry allowlist over image references (see core/image-reference.ts for
 * how a reference names its registry). It compares domains exactly: no wildcards, and a
 * port is part of the domain.
 */
export function isImageAllowed(image: string, allowed: readonly string[]): boolean {
  try {
    return allowed.includes(parseRegistry(image));
  } catch {
    return false;
  }
}

/** Returns a tenant-safe refusal message, or undefined when the image may be used. */
export function imageRefusal(image: string, allowed: readonly string[]): string | undefined {
  let domain: string;
  try {
    domain = parseRegistry(image);
  } catch (err) {
    return (err as Error).message;
  }
  if (allowed.includes(domain)) return undefined;
  return `image registry ${JSON.stringify(domain)} is not allowed (allowed: ${allowed.join(", ") || "none"})`;
}
