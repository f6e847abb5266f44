import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { copyFileSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connect } from "node:tls";
import { Agent, fetch as undiciFetch } from "undici";
import { TestPki } from "../../helpers/certs.ts";
import { until } from "../../support/index.ts";
import { sample } from "../../support/metrics.ts";
import { PROMTOOL_SKIP, promtoolMetricsProblems } from "../../support/promtool.ts";
import { mockSkus, Stack } from "../e2e/stack.ts";

/**
 * providerd's HTTPS listener (tls_cert_file/tls_key_file) through a real process: TLS
 * 1.2 or newer only, and a renewed certificate served without a restart, whether the
 * files change on disk (replaced by rename, as ACME clients do) or SIGHUP asks for it.
 */
const stack = new Stack();
let pki: TestPki;
let certFile = "";
let keyFile = "";

before(async () => {
  pki = new TestPki(stack.dir);
  pki.selfSigned("api-1", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1");
  pki.selfSigned("api-2", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1");
  pki.selfSigned("api-3", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1");
  certFile = join(stack.dir, "live.pem");
  keyFile = join(stack.dir, "live.key");
  copyFileSync(pki.file("api-1.pem"), certFile);
  copyFileSync(pki.file("api-1.key"), keyFile);
  await stack.start(
    (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_TLS_SKIP_VERIFY: "true" }],
    (s) => {
      // callback_base_url comes from the bound https:// listener.
      s.extraConfig = { tls_cert_file: certFile, tls_key_file: keyFile };
    },
  );
  await stack.launchProviderd();
});

after(async () => {
  await stack.close();
});

const https = () => stack.api.replace(/^http:/, "https:");

/** The certificate providerd presents now (its fingerprint), and the protocol it agreed. */
function handshake(
  opts: { maxVersion?: "TLSv1.1" | "TLSv1.3" } = {},
): Promise<{ fingerprint: string; protocol: string }> {
  const { port } = new URL(https());
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: "127.0.0.1",
      port: Number(port),
      rejectUnauthorized: false,
      ...(opts.maxVersion === undefined ? {} : { maxVersion: opts.maxVersion, minVersion: "TLSv1" }),
    });
    socket.once("secureConnect", () => {
      const cert = socket.getPeerX509Certificate();
      resolve({ fingerprint: cert?.fingerprint256 ?? "", protocol: socket.getProtocol() ?? "" });
      socket.end();
    });
    socket.once("error", reject);
  });
}

const fingerprint = (name: string) =>
  new X509Certificate(readFileSync(pki.file(`${name}.pem`))).fingerprint256;

describe("providerd HTTPS listener", () => {
  it("serves the API over TLS with the configured certificate", async () => {
    const dispatcher = new Agent({ connect: { ca: readFileSync(pki.file("api-1.pem")) } });
    const res = await undiciFetch(`${https()}/health`, { dispatcher });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { provider_uuid: string }).provider_uuid, stack.keys.provider_uuid);
    await dispatcher.close();
    assert.equal((await handshake()).fingerprint, fingerprint("api-1"));
  });

  it("refuses TLS older than 1.2", async () => {
    await assert.rejects(handshake({ maxVersion: "TLSv1.1" }));
    assert.match((await handshake()).protocol, /^TLSv1\.[23]$/);
  });

  it("a certificate replaced on disk is served without a restart", async () => {
    copyFileSync(pki.file("api-2.key"), `${keyFile}.new`);
    copyFileSync(pki.file("api-2.pem"), `${certFile}.new`);
    renameSync(`${keyFile}.new`, keyFile);
    renameSync(`${certFile}.new`, certFile);
    await until(
      async () => (await handshake()).fingerprint === fingerprint("api-2"),
      "the renewed certificate",
    );
  });

  it("SIGHUP reloads; a broken pair keeps the current certificate in service", async () => {
    stack.providerd!.signal("SIGHUP");
    assert.equal((await handshake()).fingerprint, fingerprint("api-2"));
    // A half-written renewal: the new certificate with the old key. It is refused.
    copyFileSync(pki.file("api-3.pem"), `${certFile}.new`);
    renameSync(`${certFile}.new`, certFile);
    stack.providerd!.signal("SIGHUP");
    await until(() => stack.providerd!.stderr().includes("TLS certificate reload refused"), "refusal logged");
    assert.equal((await handshake()).fingerprint, fingerprint("api-2"));
    copyFileSync(pki.file("api-3.key"), keyFile);
    stack.providerd!.signal("SIGHUP");
    await until(async () => (await handshake()).fingerprint === fingerprint("api-3"), "the completed pair");
  });

  it("fred_tls_certificate_expiry_timestamp_seconds is the served certificate's notAfter, after reloads too", async () => {
    const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
    const expiry = async () => {
      const res = await undiciFetch(`${https()}/metrics`, { dispatcher });
      const text = await res.text();
      if (!PROMTOOL_SKIP) assert.equal(promtoolMetricsProblems(text), "");
      return sample(text, "fred_tls_certificate_expiry_timestamp_seconds", { listener: "api" });
    };
    const notAfter = (name: string) =>
      Math.floor(new X509Certificate(readFileSync(pki.file(`${name}.pem`))).validToDate.getTime() / 1000);
    assert.equal(await expiry(), notAfter("api-3"));
    // A certificate valid for 30 days, not 2: the gauge must follow the reload.
    pki.selfSigned("api-4", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1", 30);
    copyFileSync(pki.file("api-4.key"), keyFile);
    copyFileSync(pki.file("api-4.pem"), certFile);
    stack.providerd!.signal("SIGHUP");
    await until(async () => (await expiry()) === notAfter("api-4"), "the renewed certificate's notAfter");
    assert.ok(notAfter("api-4") - notAfter("api-3") > 20 * 86_400);
    await dispatcher.close();
  });
});
