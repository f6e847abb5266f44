import { readFileSync } from "node:fs";
import { FredError } from "../../core/errors.ts";
import type { ProviderConfig } from "../config/index.ts";

/**
 * The listener's settings, taken from the config once at startup: body limit, the three
 * timeouts (read: receiving a request; write: delivering its answer; idle: a kept-alive
 * connection between requests), the edge (rate limit, proxies, CORS) and HTTPS. The
 * certificate and key are read here, so a missing or unreadable file stops startup with
 * the key's name instead of failing the first handshake.
 */
export interface ListenerOptions {
  maxRequestBodySize: number;
  readTimeoutMs: number;
  writeTimeoutMs: number;
  idleTimeoutMs: number;
  rateLimit: { rps: number; burst: number };
  trustedProxies: readonly string[];
  corsOrigins: readonly string[];
  tls: TlsFiles | undefined;
}

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** CA bundle that signs the client certificates this listener requires (mTLS). */
  caFile?: string;
  /** The config keys named when a file cannot be read (the tenant listener's by default). */
  keys?: { cert: string; key: string; ca?: string };
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
}

export function listenerOptions(config: ProviderConfig): ListenerOptions {
  return {
    maxRequestBodySize: config.maxRequestBodySize,
    readTimeoutMs: config.httpReadTimeoutMs,
    writeTimeoutMs: config.httpWriteTimeoutMs,
    idleTimeoutMs: config.httpIdleTimeoutMs,
    rateLimit: { rps: config.rateLimitRps, burst: config.rateLimitBurst },
    trustedProxies: config.trustedProxies,
    corsOrigins: config.corsOrigins,
    tls: config.tlsCertFile === "" ? undefined : { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile },
  };
}

/** Reads the PEM certificate and key (ERR_CONFIG naming the key when one cannot be read). */
export function readTls(files: TlsFiles): TlsMaterial {
  const read = (key: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new FredError(
        "ERR_CONFIG",
        `${key} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      );
    }
  };
  const keys = files.keys ?? { cert: "tls_cert_file", key: "tls_key_file" };
  const material: TlsMaterial = { cert: read(keys.cert, files.certFile), key: read(keys.key, files.keyFile) };
  if (files.caFile !== undefined) material.ca = read(keys.ca ?? "ca_file", files.caFile);
  return material;
}
