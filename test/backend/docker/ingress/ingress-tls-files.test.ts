import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connect } from "node:tls";
import { parseDockerBackendConfig } from "../../../../src/backend/docker/config.ts";
import type { Ingress } from "../../../../src/backend/docker/ingress/index.ts";
import { pickFreePort } from "../../../support/index.ts";
import { activeIngress, httpsGet, startCaddy, type TestCaddy } from "./caddy-helper.ts";
import { selfSignedCert } from "./wildcard-cert.ts";

/**
 * `tls: {cert_file, key_file}` on a real Caddy: a wildcard certificate made here with the
 * openssl CLI, loaded from the files the config names, is the certificate a lease's
 * hostname is served with (the client trusts only it). No Docker: the upstream is a plain
 * HTTP server on loopback, which is all a route needs.
 */
const WILDCARD = "apps.fred.test";
const SKU = "0190f3a2-7c1e-7000-8000-00000000d001";
const LEASE = "0190f3a2-7c1e-7000-8000-0000000000f1";

/** The certificate the server presents for `servername` on 127.0.0.1:`port`. */
function presented(port: number, servername: string, ca: Buffer): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, servername, ca }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.end();
      if (cert === undefined) reject(new Error("no peer certificate"));
      else resolve(cert);
    });
    socket.on("error", reject);
  });
}

describe("ingress: a wildcard certificate from files", () => {
  let dir: string;
  let caddy: TestCaddy;
  let upstream: Server;
  let ingress: Ingress;
  let httpsPort: number;
  let cert: Buffer;
  // The admin client's retry waits on unref'd clock timers; this handle keeps the test alive.
  let hold: NodeJS.Timeout;

  before(async () => {
    hold = setInterval(() => {}, 60_000);
    dir = mkdtempSync(join(tmpdir(), "fred-ingress-files-"));
    const files = selfSignedCert(dir, "wildcard", [`*.${WILDCARD}`]);
    cert = readFileSync(files.cert);
    caddy = await startCaddy();
    upstream = createServer((_req, res) => res.end("upstream-ok\n"));
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    httpsPort = await pickFreePort();
    // Through the config loader, as the backend reads it: relative paths, files checked.
    const config = parseDockerBackendConfig(
      {
        host_address: "127.0.0.1",
        callback_secret: "x".repeat(40),
        sku_mapping: { [SKU]: "tiny" },
        sku_profiles: { tiny: { cpu_cores: 0.1, memory_mb: 32 } },
        ingress: {
          enabled: true,
          wildcard_domain: WILDCARD,
          admin_url: caddy.adminUrl,
          https_listen: `127.0.0.1:${httpsPort}`,
          tls: { cert_file: "wildcard.crt", key_file: "wildcard.key" },
        },
      },
      { baseDir: dir },
    );
    assert.ok(config.ingress !== undefined);
    ingress = await activeIngress(config.ingress, "files-test");
  });
  after(async () => {
    await ingress?.close();
    await new Promise<void>((resolve) => (upstream ? upstream.close(() => resolve()) : resolve()));
    await caddy?.stop();
    rmSync(dir, { recursive: true, force: true });
    clearInterval(hold);
  });

  it("serves a lease's hostname with the configured certificate; an unknown name gets a 404", async () => {
    const host = `app-0f1aaaa.${WILDCARD}`;
    const port = (upstream.address() as AddressInfo).port;
    await ingress.setLease(LEASE, [{ service: "app", index: 0, host, dial: `127.0.0.1:${port}` }], []);
    assert.deepEqual(await httpsGet(host, httpsPort, cert), { status: 200, body: "upstream-ok\n" });
    const served = await presented(httpsPort, host, cert);
    assert.equal(served.fingerprint256, new X509Certificate(cert).fingerprint256);
    assert.equal(served.subjectAltName, `DNS:*.${WILDCARD}`);
    // Another label under the wildcard: the same certificate, but no route.
    const other = await httpsGet(`nobody-1234567.${WILDCARD}`, httpsPort, cert);
    assert.equal(other.status, 404);
    // No on-demand policy for our hostnames: the files cover them, nothing is ever issued.
    const policies = (await caddy.config("apps/tls/automation/policies")) as { subjects?: string[] }[] | null;
    assert.ok(
      (policies ?? []).every((p) => !(p.subjects ?? []).includes(`*.${WILDCARD}`)),
      JSON.stringify(policies),
    );
    await ingress.dropLease(LEASE);
    const gone = await httpsGet(host, httpsPort, cert);
    assert.equal(gone.status, 404);
  });
});
