import { X509Certificate } from "node:crypto";
import { Gauge, type Registry } from "prom-client";

/**
 * `fred_tls_certificate_expiry_timestamp_seconds{listener}`: when the certificate a
 * listener serves stops being valid (its notAfter, Unix seconds), so an alert can fire
 * well before it does. Set when the listener starts and again on every reload it accepts;
 * a listener without TLS has no series. Each listener records through the same gauge:
 * `recordCertificateExpiry(registry, "operator", certPem)`.
 */
const NAME = "fred_tls_certificate_expiry_timestamp_seconds";

function expiryGauge(registry: Registry): Gauge<"listener"> {
  const existing = registry.getSingleMetric(NAME);
  if (existing !== undefined) return existing as Gauge<"listener">;
  return new Gauge({
    name: NAME,
    help: "notAfter of the certificate each TLS listener serves (Unix seconds)",
    labelNames: ["listener"],
    registers: [registry],
  });
}

/** Records the notAfter of the first certificate in `certPem` (the served leaf) for `listener`. */
export function recordCertificateExpiry(
  registry: Registry,
  listener: "api" | "operator",
  certPem: Buffer,
): void {
  const notAfter = new X509Certificate(certPem).validToDate.getTime();
  expiryGauge(registry).set({ listener }, Math.floor(notAfter / 1000));
}
