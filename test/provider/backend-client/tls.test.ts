import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { isFredError } from "../../../src/core/errors.ts";
import { BackendClient } from "../../../src/provider/backend-client/index.ts";
import type { BackendConfig } from "../../../src/provider/config/index.ts";
import { TestPki } from "../../helpers/certs.ts";
import { backendConfigFor } from "./backend-config.ts";
import { type FakeBackend, startFakeBackend } from "./fake-backend.ts";

/**
 * TLS options against a real HTTPS backend that demands a client certificate: a private
 * CA (tls_ca_file), mTLS (tls_client_cert_file/key_file), and failure without them.
 */
const SECRET = "backend-tls-test-secret-0123456789abc";
const SID = "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f";
const dir = mkdtempSync(join(tmpdir(), "fred-backend-tls-"));
const pki = new TestPki(dir);
const file = (name: string) => pki.file(name);
let fake: FakeBackend;

before(async () => {
  pki.selfSigned("ca", "/CN=fred test CA");
  pki.issue("server", "ca", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  pki.issue("client", "ca", "/CN=providerd", "extendedKeyUsage=clientAuth\n");
  fake = await startFakeBackend({
    storageId: SID,
    secret: SECRET,
    tls: {
      key: readFileSync(file("server.key")),
      cert: readFileSync(file("server.pem")),
      ca: readFileSync(file("ca.pem")),
    },
  });
});
after(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

function config(over: Partial<BackendConfig>): BackendConfig {
  return backendConfigFor(fake.url, SECRET, { name: "tls", ...over });
}

async function statsWith(over: Partial<BackendConfig>): Promise<string> {
  const client = await BackendClient.create({ backend: config(over), secret: SECRET, storageId: SID });
  try {
    const stats = await client.stats();
    return `ok ${stats.totalCpuCores}`;
  } catch (err) {
    assert.ok(isFredError(err), String(err));
    return err.code;
  } finally {
    await client.close();
  }
}

describe("backend client over HTTPS", () => {
  it("verifies the backend with tls_ca_file and authenticates with the client certificate", async () => {
    assert.equal(
      await statsWith({
        tlsCaFile: file("ca.pem"),
        tlsClientCertFile: file("client.pem"),
        tlsClientKeyFile: file("client.key"),
      }),
      "ok 8",
    );
  });

  it("fails without the private CA (system roots do not know it)", async () => {
    assert.equal(
      await statsWith({ tlsClientCertFile: file("client.pem"), tlsClientKeyFile: file("client.key") }),
      "ERR_BACKEND_TRANSPORT",
    );
  });

  it("fails when the backend demands a client certificate and none is configured", async () => {
    assert.equal(await statsWith({ tlsCaFile: file("ca.pem") }), "ERR_BACKEND_TRANSPORT");
  });

  it("tls_skip_verify (development) skips server verification but still presents the client certificate", async () => {
    assert.equal(
      await statsWith({
        tlsSkipVerify: true,
        tlsClientCertFile: file("client.pem"),
        tlsClientKeyFile: file("client.key"),
      }),
      "ok 8",
    );
  });
});
