import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Agent, request } from "undici";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { readTls } from "../../../src/provider/http/listener.ts";
import { TLS_MIN_VERSION, TlsReloader } from "../../../src/provider/http/tls-reload.ts";
import { TestPki } from "../../helpers/certs.ts";

/**
 * A listener that requires client certificates (the operator listener with
 * operator_client_ca_file) keeps requiring them, from the same CA, after its certificate is
 * reloaded: the client CA is part of the secure context the reload replaces.
 */
describe("TLS reload with a client CA", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-tls-reload-ca-"));
  const pki = new TestPki(dir);
  let server: Server;
  let url: string;
  let reloader: TlsReloader;
  const files = {
    certFile: join(dir, "live.pem"),
    keyFile: join(dir, "live.key"),
    caFile: pki.file("ca.pem"),
    keys: { cert: "operator_tls_cert_file", key: "operator_tls_key_file", ca: "operator_client_ca_file" },
  };

  before(async () => {
    pki.selfSigned("ca", "/CN=reload test CA");
    for (const name of ["server-1", "server-2"])
      pki.issue(name, "ca", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
    pki.issue("client", "ca", "/CN=operator", "extendedKeyUsage=clientAuth\n");
    copyFileSync(pki.file("server-1.pem"), files.certFile);
    copyFileSync(pki.file("server-1.key"), files.keyFile);
    server = createServer(
      { ...readTls(files), minVersion: TLS_MIN_VERSION, requestCert: true, rejectUnauthorized: true },
      (_req, res) => res.end("ok"),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    reloader = new TlsReloader(files, server, systemClock, createLogger("test", "error"));
  });

  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const ca = () => readFileSync(pki.file("ca.pem"));
  const withCert = () =>
    new Agent({
      connect: {
        ca: ca(),
        cert: readFileSync(pki.file("client.pem")),
        key: readFileSync(pki.file("client.key")),
      },
    });
  const served = async (agent: Agent) => {
    const res = await request(url, { dispatcher: agent });
    const peer = res.statusCode;
    await res.body.text();
    await agent.close();
    return peer;
  };

  it("refuses a client without a certificate before and after a reload; takes one with", async () => {
    assert.equal(await served(withCert()), 200);
    await assert.rejects(served(new Agent({ connect: { ca: ca() } })));
    copyFileSync(pki.file("server-2.pem"), files.certFile);
    copyFileSync(pki.file("server-2.key"), files.keyFile);
    assert.equal(reloader.reload(), true);
    assert.equal(await served(withCert()), 200);
    await assert.rejects(served(new Agent({ connect: { ca: ca() } })));
  });

  it("names the operator key when the client CA cannot be read", () => {
    assert.throws(
      () => readTls({ ...files, caFile: join(dir, "missing.pem") }),
      /operator_client_ca_file .*missing\.pem cannot be read: ENOENT/,
    );
  });
});
