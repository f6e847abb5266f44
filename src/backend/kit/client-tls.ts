import { X509Certificate } from "node:crypto";
import type { TLSSocket } from "node:tls";
import { FredError } from "../../core/errors.ts";

/**
 * Client certificates on the backend's HTTPS listener (mutual TLS): the options, their
 * checks, and reading a verified peer's names.
 */

/**
 * The HTTPS listener. With `clientCa`, the handshake demands a client certificate that
 * chains to it (mutual TLS), so a peer without one never reaches a route — not even
 * /health. With `clientAllowedNames` as well, a verified certificate must also carry one
 * of those names as its subject CN or a DNS subjectAltName (exact match), or every request
 * on the connection is answered 403.
 */
export interface ContractHttpsOptions {
  cert: Buffer;
  key: Buffer;
  /** PEM bundle of the CA(s) client certificates must chain to. */
  clientCa?: Buffer;
  /** Names a client certificate must carry one of; needs `clientCa`. */
  clientAllowedNames?: readonly string[];
}

/** Refuses inconsistent listener options before anything binds (ERR_CONFIG). */
export function checkHttpsOptions(h: ContractHttpsOptions): void {
  if (h.clientAllowedNames !== undefined && h.clientCa === undefined)
    throw new FredError("ERR_CONFIG", "allowed client certificate names need a client CA bundle");
  if (h.clientAllowedNames?.length === 0)
    throw new FredError("ERR_CONFIG", "the list of allowed client certificate names is empty");
  if (h.clientAllowedNames?.some((n) => n.trim() === ""))
    throw new FredError("ERR_CONFIG", "an allowed client certificate name is empty");
  if (h.clientCa !== undefined) checkClientCaBundle(h.clientCa, "the client CA bundle");
}

/**
 * A client CA bundle must be PEM holding at least one certificate, every one parseable:
 * otherwise the listener would quietly trust nothing (or less than the operator meant).
 */
export function checkClientCaBundle(pem: Buffer, what: string): void {
  const blocks = pem
    .toString("latin1")
    .match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
  if (blocks === null) throw new FredError("ERR_CONFIG", `${what} holds no PEM certificate`);
  blocks.forEach((block, i) => {
    try {
      new X509Certificate(block);
    } catch {
      throw new FredError("ERR_CONFIG", `${what}: certificate ${i + 1} is not a valid X.509 certificate`);
    }
  });
}

export function tlsServerOptions(h: ContractHttpsOptions): Record<string, unknown> {
  checkHttpsOptions(h);
  const base = { cert: h.cert, key: h.key };
  if (h.clientCa === undefined) return base;
  return { ...base, ca: h.clientCa, requestCert: true, rejectUnauthorized: true };
}

/** Subject CN(s) and DNS subjectAltNames of the connection's verified client certificate. */
export function peerNames(socket: TLSSocket): string[] {
  const cert = socket.getPeerCertificate();
  if (cert === null || typeof cert !== "object" || Object.keys(cert).length === 0) return [];
  const cn = (cert.subject as Record<string, string | string[] | undefined> | undefined)?.CN;
  const names = cn === undefined ? [] : Array.isArray(cn) ? [...cn] : [cn];
  for (const [kind, value] of altNameEntries(cert.subjectaltname ?? ""))
    if (kind === "DNS") names.push(value);
  return names;
}

/**
 * Splits Node's `subjectaltname` text ("DNS:a, IP Address:1.2.3.4, …"). Node prints a
 * value holding a comma, quote or other awkward character as a JSON string, so quoted
 * values are read as JSON; that way a crafted URI cannot smuggle in a ", DNS:" entry.
 */
export function altNameEntries(text: string): [string, string][] {
  const out: [string, string][] = [];
  let i = 0;
  while (i < text.length) {
    const colon = text.indexOf(":", i);
    if (colon < 0) break;
    const kind = text.slice(i, colon);
    let value: string;
    let end: number;
    if (text[colon + 1] === '"') {
      end = colon + 2;
      while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      end += 1;
      try {
        value = JSON.parse(text.slice(colon + 1, end)) as string;
      } catch {
        return out; // unreadable text: stop rather than guess at names
      }
    } else {
      end = text.indexOf(", ", colon + 1);
      if (end < 0) end = text.length;
      value = text.slice(colon + 1, end);
    }
    out.push([kind, value]);
    if (end >= text.length) break;
    if (text.slice(end, end + 2) !== ", ") return out;
    i = end + 2;
  }
  return out;
}
