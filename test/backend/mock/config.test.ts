import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { loadMockBackendConfig } from "../../../src/backend/mock/config.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { TestPki } from "../../helpers/certs.ts";
import { SECRET } from "./helpers.ts";

/** MOCK_BACKEND_TLS_CLIENT_* : mutual TLS settings of the mock, validated from the environment. */
describe("mock backend config: mutual TLS", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-mock-config-"));
  const file = (name: string) => join(dir, name);
  before(() => {
    // One self-signed EC certificate serves as server certificate and as client CA here:
    // only the parsing is under test (handshakes are in test/backend/kit/mtls.test.ts).
    new TestPki(dir).selfSigned("tls", "/CN=127.0.0.1");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const env = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    ...extra,
  });
  const https = () => ({
    MOCK_BACKEND_TLS_CERT_FILE: file("tls.pem"),
    MOCK_BACKEND_TLS_KEY_FILE: file("tls.key"),
  });
  const refusal = (extra: Record<string, string>): string => {
    try {
      loadMockBackendConfig(env(extra));
    } catch (err) {
      assert.ok(isFredError(err, "ERR_CONFIG"), String(err));
      assert.doesNotMatch(err.message, new RegExp(SECRET));
      return err.message;
    }
    assert.fail("config was accepted");
  };

  it("reads the CA bundle and the comma-separated names, trimmed, into the frozen TLS options", () => {
    const c = loadMockBackendConfig(
      env({
        ...https(),
        MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("tls.pem"),
        MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES: " providerd.fred.internal , ops console,,",
      }),
    );
    assert.deepEqual(c.tls?.clientCa, readFileSync(file("tls.pem")));
    assert.deepEqual(c.tls?.clientAllowedNames, ["providerd.fred.internal", "ops console"]);
    assert.ok(Object.isFrozen(c.tls));
    assert.ok(Object.isFrozen(c.tls?.clientAllowedNames));
  });

  it("a CA alone requires a certificate from it but no particular name; unset means plain HTTPS", () => {
    const withCa = loadMockBackendConfig(
      env({ ...https(), MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("tls.pem") }),
    );
    assert.ok(withCa.tls?.clientCa instanceof Buffer);
    assert.equal(withCa.tls?.clientAllowedNames, undefined);
    const plain = loadMockBackendConfig(env({ ...https(), MOCK_BACKEND_TLS_CLIENT_CA_FILE: "" }));
    assert.equal(plain.tls?.clientCa, undefined);
    assert.equal(loadMockBackendConfig(env({})).tls, undefined);
  });

  it("refuses names without a CA, a CA without HTTPS, and unreadable or empty CA files", () => {
    assert.match(
      refusal({ ...https(), MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES: "providerd" }),
      /MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES needs MOCK_BACKEND_TLS_CLIENT_CA_FILE/,
    );
    assert.match(
      refusal({ MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES: "providerd" }),
      /MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES needs MOCK_BACKEND_TLS_CLIENT_CA_FILE/,
    );
    assert.match(
      refusal({ MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("tls.pem") }),
      /MOCK_BACKEND_TLS_CLIENT_CA_FILE needs MOCK_BACKEND_TLS_CERT_FILE and MOCK_BACKEND_TLS_KEY_FILE/,
    );
    assert.match(
      refusal({ ...https(), MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("absent.pem") }),
      /MOCK_BACKEND_TLS_CLIENT_CA_FILE .*absent\.pem cannot be read: ENOENT/,
    );
    assert.match(refusal({ ...https(), MOCK_BACKEND_TLS_CLIENT_CA_FILE: dir }), /cannot be read: EISDIR/);
    assert.match(
      refusal({ ...https(), MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("tls.key") }),
      /holds no PEM certificate/,
    );
    assert.match(
      refusal({
        ...https(),
        MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("tls.pem"),
        MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES: " , ,",
      }),
      /MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES lists no name/,
    );
  });
});

describe("mock backend config: MOCK_BACKEND_DIAGNOSTICS_MAX_AGE", () => {
  const env = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    ...extra,
  });

  it("defaults to 168h and takes a Go duration", () => {
    assert.equal(loadMockBackendConfig(env({})).diagnosticsMaxAgeMs, 168 * 3_600_000);
    const c = loadMockBackendConfig(env({ MOCK_BACKEND_DIAGNOSTICS_MAX_AGE: "2h30m" }));
    assert.equal(c.diagnosticsMaxAgeMs, 9_000_000);
  });

  it("takes 0 as never expire", () => {
    for (const value of ["0", "0s"]) {
      assert.equal(
        loadMockBackendConfig(env({ MOCK_BACKEND_DIAGNOSTICS_MAX_AGE: value })).diagnosticsMaxAgeMs,
        0,
        value,
      );
    }
  });

  it("refuses values that are not durations, naming the variable", () => {
    for (const [value, why] of [
      ["7d", /MOCK_BACKEND_DIAGNOSTICS_MAX_AGE must be a Go duration/],
      ["-1h", /MOCK_BACKEND_DIAGNOSTICS_MAX_AGE must be a Go duration/],
    ] as const) {
      assert.throws(
        () => loadMockBackendConfig(env({ MOCK_BACKEND_DIAGNOSTICS_MAX_AGE: value })),
        (err: unknown) => isFredError(err, "ERR_CONFIG") && why.test(err.message),
        value,
      );
    }
  });
});

describe("mock backend config: MOCK_BACKEND_MAINTENANCE_RECEIPTS", () => {
  const env = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    ...extra,
  });

  it("defaults to the kit's 1,024 receipts per lease and takes a positive integer", () => {
    assert.equal(loadMockBackendConfig(env({})).maintenanceReceipts, 1_024);
    const c = loadMockBackendConfig(env({ MOCK_BACKEND_MAINTENANCE_RECEIPTS: "2" }));
    assert.equal(c.maintenanceReceipts, 2);
  });

  it("refuses 0 and values that are not integers, naming the variable", () => {
    for (const value of ["0", "-1", "1.5", "many"]) {
      assert.throws(
        () => loadMockBackendConfig(env({ MOCK_BACKEND_MAINTENANCE_RECEIPTS: value })),
        (err: unknown) =>
          isFredError(err, "ERR_CONFIG") && /MOCK_BACKEND_MAINTENANCE_RECEIPTS/.test(err.message),
        value,
      );
    }
  });
});

describe("mock backend config: MOCK_BACKEND_ADDR", () => {
  const env = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    ...extra,
  });
  const refusal = (extra: Record<string, string>): string => {
    try {
      loadMockBackendConfig(env(extra));
    } catch (err) {
      assert.ok(isFredError(err, "ERR_CONFIG"), String(err));
      return err.message;
    }
    assert.fail("config was accepted");
  };

  it("takes host:port (an empty host is every interface) or unix:/absolute/path", () => {
    assert.deepEqual(loadMockBackendConfig(env({})).listen, { host: "127.0.0.1", port: 9000 });
    assert.deepEqual(loadMockBackendConfig(env({ MOCK_BACKEND_ADDR: ":0" })).listen, {
      host: "0.0.0.0",
      port: 0,
    });
    assert.deepEqual(loadMockBackendConfig(env({ MOCK_BACKEND_ADDR: "[::1]:9100" })).listen, {
      host: "::1",
      port: 9100,
    });
    assert.deepEqual(loadMockBackendConfig(env({ MOCK_BACKEND_ADDR: "unix:/run/fred/mock.sock" })).listen, {
      socketPath: "/run/fred/mock.sock",
    });
  });

  it("refuses a bad address, a relative socket path, and TLS on a socket, naming the variables", () => {
    assert.match(refusal({ MOCK_BACKEND_ADDR: "9000" }), /MOCK_BACKEND_ADDR "9000" is not host:port/);
    assert.match(
      refusal({ MOCK_BACKEND_ADDR: "unix:mock.sock" }),
      /MOCK_BACKEND_ADDR "unix:mock.sock" must name an absolute socket path/,
    );
    assert.match(
      refusal({
        MOCK_BACKEND_ADDR: "unix:/run/fred/mock.sock",
        MOCK_BACKEND_TLS_CERT_FILE: "/etc/fred/c.pem",
        MOCK_BACKEND_TLS_KEY_FILE: "/etc/fred/k.pem",
      }),
      /MOCK_BACKEND_TLS_CERT_FILE and MOCK_BACKEND_TLS_KEY_FILE cannot be used with a unix: listen address/,
    );
  });
});
