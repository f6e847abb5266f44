import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Agent, request } from "undici";
import { altNameEntries } from "../../../src/backend/kit/client-tls.ts";
import { loadMockBackendConfig } from "../../../src/backend/mock/config.ts";
import { startMockBackend } from "../../../src/backend/mock/main.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { createLogger } from "../../../src/log.ts";
import { BackendClient, type MutationOutcome } from "../../../src/provider/backend-client/index.ts";
import type { BackendConfig } from "../../../src/provider/config/index.ts";
import { TestPki } from "../../helpers/certs.ts";
import { backendConfigFor } from "../../provider/backend-client/backend-config.ts";
import { dockerSkip } from "../../support/docker.ts";
import { type RunResult as CliResult, runFred } from "../../support/index.ts";
import { prepareDockerBackend, spawnDockerBackend } from "../docker/helpers.ts";
import { spawnMock } from "../mock/process.ts";
import { type Receiver, startReceiver } from "./receiver.ts";

/**
 * Mutual TLS on the backend's HTTPS listener, end to end: a real `fred backend mock`
 * process demanding client certificates from a private CA (and one of two names), and
 * providerd's real BackendClient presenting — or not — a certificate made by openssl.
 */
const SECRET = "mtls-test-secret-0123456789abcdef-0123";
const ALLOWED = "providerd.fred.internal,ops-console";
const SKU = "0190f3a2-7c1e-7000-8000-00000000f001";
const PROVIDER = "0190f3a2-7c1e-7000-8000-00000000f0aa";
// Awaited before any test is declared: the root hooks below must see every suite.
const skipDocker = await dockerSkip({ btrfs: true });
const dir = mkdtempSync(join(tmpdir(), "fred-mtls-"));
const pki = new TestPki(dir);
const file = (name: string) => pki.file(name);

function makeCertificates(): void {
  pki.selfSigned("ca", "/CN=fred mtls test CA");
  pki.selfSigned("other-ca", "/CN=somebody else's CA");
  pki.issue("server", "ca", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  // Allowed by its DNS subjectAltName; its CN is deliberately not on the list.
  pki.issue(
    "providerd",
    "ca",
    "/CN=providerd-host-7",
    "subjectAltName=DNS:providerd.fred.internal\nextendedKeyUsage=clientAuth\n",
  );
  // Allowed by its subject CN alone (no subjectAltName at all).
  pki.issue("ops", "ca", "/CN=ops-console", "extendedKeyUsage=clientAuth\n");
  // Right CA, wrong names; its URI tries to smuggle an allowed DNS name past the parser.
  pki.issue(
    "intruder",
    "ca",
    "/CN=intruder",
    "subjectAltName=@alt\nextendedKeyUsage=clientAuth\n[alt]\nDNS.1=intruder.example\n" +
      "URI.1=https://intruder.example/x, DNS:providerd.fred.internal\n",
  );
  // An allowed name, but vouched for by a CA the backend does not trust.
  pki.issue(
    "stranger",
    "other-ca",
    "/CN=providerd.fred.internal",
    "subjectAltName=DNS:providerd.fred.internal\nextendedKeyUsage=clientAuth\n",
  );
}

function backendConfig(url: string, over: Partial<BackendConfig>): BackendConfig {
  return backendConfigFor(url, SECRET, {
    name: "mtls",
    timeoutMs: 15_000,
    tlsCaFile: file("ca.pem"),
    ...over,
  });
}

const clientCert = (name: string): Partial<BackendConfig> => ({
  tlsClientCertFile: file(`${name}.pem`),
  tlsClientKeyFile: file(`${name}.key`),
});

function provisionRequest(receiver: Receiver, leaseUuid: string) {
  const op = randomUUID();
  return {
    leaseUuid,
    tenant: "manifest1mtlstenant",
    providerUuid: PROVIDER,
    items: [{ sku: SKU, quantity: 1 }],
    callbackUrl: `${receiver.url}/callbacks/provision?operation_id=${op}`,
    lifecycleCallbackUrl: `${receiver.url}/callbacks/provision?lifecycle_id=${op}`,
  };
}

/** Runs `fred backend mock` to its exit (config errors end it before it listens). */
function runMock(env: Record<string, string>, extraArgs: string[] = []): Promise<CliResult> {
  return runFred(["backend", "mock", ...extraArgs], { env, cleanEnv: true });
}

before(() => makeCertificates());
after(() => rmSync(dir, { recursive: true, force: true }));

describe("mutual TLS against a real `fred backend mock`", () => {
  let mock: Awaited<ReturnType<typeof spawnMock>>;
  let receiver: Receiver;
  let good: BackendClient;
  const clients: BackendClient[] = [];
  const LEASE = randomUUID();

  async function client(over: Partial<BackendConfig>): Promise<BackendClient> {
    const c = await BackendClient.create({
      backend: backendConfig(mock.ready.url, over),
      secret: SECRET,
      storageId: mock.ready.storage_id,
    });
    clients.push(c);
    return c;
  }

  /** The journal as the trusted client sees it: which leases exist. */
  async function leasesInJournal(): Promise<string[]> {
    return (await good.inventory()).provisions.map((p) => p.leaseUuid).sort();
  }

  async function assertRefusedAtTls(c: BackendClient): Promise<void> {
    const stray = randomUUID();
    const outcome: MutationOutcome = await c.provision(provisionRequest(receiver, stray));
    // The handshake fails before any HTTP answer: from providerd's side the request may
    // or may not have been acted on, so it is ambiguous, never refused and never accepted.
    assert.equal(outcome.kind, "ambiguous", JSON.stringify(outcome));
    assert.equal(outcome.kind === "ambiguous" && outcome.reason, "transport", JSON.stringify(outcome));
    await assert.rejects(c.inventory(), (err) => isFredError(err, "ERR_BACKEND_TRANSPORT"));
    await assert.rejects(c.healthy(), (err) => isFredError(err, "ERR_BACKEND_TRANSPORT"));
    assert.equal(await good.provisionInfo(stray), undefined);
    assert.deepEqual(await leasesInJournal(), [LEASE]);
  }

  before(async () => {
    receiver = await startReceiver(SECRET);
    mock = await spawnMock({
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_NAME: "mtls",
      MOCK_BACKEND_STORAGE_ID: randomUUID(),
      MOCK_BACKEND_CALLBACK_SECRET: SECRET,
      MOCK_BACKEND_TLS_CERT_FILE: file("server.pem"),
      MOCK_BACKEND_TLS_KEY_FILE: file("server.key"),
      MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("ca.pem"),
      MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES: ALLOWED,
    });
    good = await client(clientCert("providerd"));
  });
  after(async () => {
    for (const c of clients) await c.close();
    await mock?.stop();
    await receiver?.close();
  });

  it("(a) a certificate from the CA with an allowed DNS name provisions and reads the inventory", async () => {
    assert.match(mock.ready.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(await good.healthy(), true);
    const outcome = await good.provision(provisionRequest(receiver, LEASE));
    assert.equal(outcome.kind, "accepted", JSON.stringify(outcome));
    await receiver.waitFor((r) => r.effects.includes(`operation:${LEASE}:success`));
    const inventory = await good.inventory();
    assert.equal(inventory.storageId, mock.ready.storage_id);
    assert.deepEqual(
      inventory.provisions.map((p) => [p.leaseUuid, p.status]),
      [[LEASE, "ready"]],
    );
  });

  it("(a) a name carried only as the subject CN is accepted as well", async () => {
    const ops = await client(clientCert("ops"));
    assert.equal((await ops.stats()).totalCpuCores > 0, true);
    assert.deepEqual(
      (await ops.inventory()).provisions.map((p) => p.leaseUuid),
      [LEASE],
    );
  });

  it("(b) without a client certificate the request fails in the handshake; nothing is journaled", async () => {
    await assertRefusedAtTls(await client({}));
  });

  it("(c) a certificate from another CA is refused in the handshake, allowed name or not", async () => {
    await assertRefusedAtTls(await client(clientCert("stranger")));
  });

  it("(d) the right CA but no allowed name: 403 with the backend envelope, before the HMAC check", async () => {
    const intruder = await client(clientCert("intruder"));
    const stray = randomUUID();
    const outcome = await intruder.provision(provisionRequest(receiver, stray));
    assert.deepEqual(outcome, {
      kind: "ambiguous",
      reason: "unexpected-status",
      status: 403,
      detail: "client certificate is not allowed",
    });
    await assert.rejects(
      intruder.inventory(),
      (err) => isFredError(err, "ERR_BACKEND_STATUS") && err.details?.status === 403,
    );
    assert.equal(await good.provisionInfo(stray), undefined);
    assert.deepEqual(await leasesInJournal(), [LEASE]);

    // Raw, unsigned: still 403 (not 401), so the name check comes first; the envelope and
    // the storage header are the ones every other refusal carries.
    const dispatcher = new Agent({
      connect: {
        ca: readFileSync(file("ca.pem")),
        cert: readFileSync(file("intruder.pem")),
        key: readFileSync(file("intruder.key")),
      },
    });
    try {
      const res = await request(`${mock.ready.url}/provision`, {
        method: "POST",
        body: "{}",
        headers: { "content-type": "application/json" },
        dispatcher,
      });
      assert.equal(res.statusCode, 403);
      assert.equal(res.headers["x-fred-backend-storage-id"], mock.ready.storage_id);
      assert.deepEqual(await res.body.json(), {
        error: "client certificate is not allowed",
        code: "client_certificate_not_allowed",
      });
      const health = await request(`${mock.ready.url}/health`, { dispatcher });
      assert.equal(health.statusCode, 403);
      await health.body.dump();
    } finally {
      await dispatcher.close();
    }
    const log = mock.stderr();
    assert.match(log, /client certificate names none of the allowed names/);
    assert.match(log, /"peer_names":\["intruder","intruder\.example"\]/);
    assert.doesNotMatch(log, new RegExp(SECRET));
  });

  it("the unauthenticated routes sit behind the TLS requirement too", async () => {
    const bare = new Agent({ connect: { ca: readFileSync(file("ca.pem")) } });
    const withCert = new Agent({
      connect: {
        ca: readFileSync(file("ca.pem")),
        cert: readFileSync(file("ops.pem")),
        key: readFileSync(file("ops.key")),
      },
    });
    try {
      for (const path of ["/health", "/stats", "/metrics"]) {
        await assert.rejects(
          request(`${mock.ready.url}${path}`, { dispatcher: bare }),
          `${path} without a certificate`,
        );
        const res = await request(`${mock.ready.url}${path}`, { dispatcher: withCert });
        assert.equal(res.statusCode, 200, path);
        await res.body.dump();
      }
    } finally {
      await bare.close();
      await withCert.close();
    }
  });
});

describe("mutual TLS configuration errors of `fred backend mock`", () => {
  const base = () => ({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
  });
  const https = {
    MOCK_BACKEND_TLS_CERT_FILE: file("server.pem"),
    MOCK_BACKEND_TLS_KEY_FILE: file("server.key"),
  };
  const cases: [string, () => Record<string, string>, RegExp][] = [
    [
      "allowed names without a CA",
      () => ({ ...https, MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES: "providerd" }),
      /MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES needs MOCK_BACKEND_TLS_CLIENT_CA_FILE/,
    ],
    [
      "a CA without a server certificate",
      () => ({ MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("ca.pem") }),
      /MOCK_BACKEND_TLS_CLIENT_CA_FILE needs MOCK_BACKEND_TLS_CERT_FILE/,
    ],
    [
      "an unreadable CA file",
      () => ({ ...https, MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("no-such-ca.pem") }),
      /MOCK_BACKEND_TLS_CLIENT_CA_FILE .*no-such-ca\.pem cannot be read: ENOENT/,
    ],
    [
      "a CA file holding no certificate",
      () => ({ ...https, MOCK_BACKEND_TLS_CLIENT_CA_FILE: file("ca.key") }),
      /holds no PEM certificate/,
    ],
  ];
  for (const [name, env, message] of cases) {
    it(`exits 1 on ${name}, before listening`, async () => {
      const r = await runMock({ ...base(), ...env() });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, "");
    });
  }

  it("--help documents both variables", async () => {
    const r = await runMock({}, ["--help"]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /MOCK_BACKEND_TLS_CLIENT_CA_FILE/);
    assert.match(r.stdout, /MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES/);
  });

  it("the kit itself refuses allowed names without a CA (ERR_CONFIG), whoever builds the options", async () => {
    const config = loadMockBackendConfig({
      ...base(),
      MOCK_BACKEND_TLS_CERT_FILE: file("server.pem"),
      MOCK_BACKEND_TLS_KEY_FILE: file("server.key"),
    });
    const logger = createLogger("mtls-test", "silent");
    const tls = config.tls as NonNullable<typeof config.tls>;
    await assert.rejects(
      startMockBackend({ ...config, tls: { ...tls, clientAllowedNames: ["providerd"] } }, { logger }),
      (err) => isFredError(err, "ERR_CONFIG") && /need a client CA/.test(err.message),
    );
    await assert.rejects(
      startMockBackend(
        { ...config, tls: { ...tls, clientCa: readFileSync(file("ca.pem")), clientAllowedNames: [] } },
        { logger },
      ),
      (err) => isFredError(err, "ERR_CONFIG") && /empty/.test(err.message),
    );
    await assert.rejects(
      startMockBackend({ ...config, tls: { ...tls, clientCa: Buffer.from("not pem") } }, { logger }),
      (err) => isFredError(err, "ERR_CONFIG") && /no PEM certificate/.test(err.message),
    );
  });
});

describe("subjectAltName parsing", () => {
  it("reads quoted values as JSON, so a crafted URI cannot add a DNS name", () => {
    assert.deepEqual(
      altNameEntries('DNS:a.example, URI:"https://x/\\u002c DNS:evil", IP Address:127.0.0.1'),
      [
        ["DNS", "a.example"],
        ["URI", "https://x/, DNS:evil"],
        ["IP Address", "127.0.0.1"],
      ],
    );
    assert.deepEqual(altNameEntries(""), []);
    assert.deepEqual(altNameEntries('DNS:"quoted\\"name", DNS:b'), [
      ["DNS", 'quoted"name'],
      ["DNS", "b"],
    ]);
    // Malformed text stops the walk rather than yielding guessed names.
    assert.deepEqual(altNameEntries('DNS:a, URI:"unterminated, DNS:evil'), [["DNS", "a"]]);
    assert.deepEqual(altNameEntries("DNS:a,DNS:b"), [["DNS", "a,DNS:b"]]);
  });
});

describe("mutual TLS on a real `fred backend docker`", { skip: skipDocker }, () => {
  it("requires a client certificate from the CA and an allowed name", async () => {
    const setup = prepareDockerBackend({
      volume_filesystem: "none",
      tls_cert_file: file("server.pem"),
      tls_key_file: file("server.key"),
      tls_client_ca_file: file("ca.pem"),
      tls_client_allowed_names: ["providerd.fred.internal"],
    });
    const docker = await spawnDockerBackend(setup.configPath);
    const agent = (name?: string) =>
      new Agent({
        connect: {
          ca: readFileSync(file("ca.pem")),
          ...(name === undefined
            ? {}
            : { cert: readFileSync(file(`${name}.pem`)), key: readFileSync(file(`${name}.key`)) }),
        },
      });
    const agents = [agent("providerd"), agent("ops"), agent()];
    const [allowed, unlisted, bare] = agents as [Agent, Agent, Agent];
    try {
      assert.match(docker.ready.url, /^https:/);
      const ok = await request(`${docker.ready.url}/stats`, { dispatcher: allowed });
      assert.equal(ok.statusCode, 200);
      await ok.body.dump();
      const refused = await request(`${docker.ready.url}/stats`, { dispatcher: unlisted });
      assert.equal(refused.statusCode, 403);
      assert.equal(
        ((await refused.body.json()) as { error: string }).error,
        "client certificate is not allowed",
      );
      await assert.rejects(request(`${docker.ready.url}/stats`, { dispatcher: bare }));
    } finally {
      for (const a of agents) await a.close();
      await docker.stop();
      await setup.cleanup();
    }
  });
});
