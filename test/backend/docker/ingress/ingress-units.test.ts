import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseDockerBackendConfig } from "../../../../src/backend/docker/config.ts";
import {
  caddyIds,
  customPolicyJson,
  hostsPolicyJson,
  serverJson,
} from "../../../../src/backend/docker/ingress/caddy-config.ts";
import { adminUrlProblem, type IngressConfig } from "../../../../src/backend/docker/ingress/config.ts";
import {
  chooseIngressPort,
  customDomainProblem,
  dnsReadiness,
  subdomainLabel,
} from "../../../../src/backend/docker/ingress/index.ts";
import { startDns, type TestDns } from "./dns-server.ts";
import { selfSignedCert } from "./wildcard-cert.ts";

/** The ingress pieces that need neither Caddy nor Docker: config, names, proxy JSON shape, DNS gate. */

const SKU = "0190f3a2-7c1e-7000-8000-00000000d001";
const LEASE = "0190f3a2-7c1e-7000-8000-0000000000aa";
const base = {
  host_address: "127.0.0.1",
  callback_secret: "x".repeat(40),
  sku_mapping: { [SKU]: "tiny" },
  sku_profiles: { tiny: { cpu_cores: 0.1, memory_mb: 32 } },
};
const parse = (ingress: unknown, extra: Record<string, unknown> = {}) =>
  parseDockerBackendConfig({ ...base, ...extra, ingress }, { baseDir: "/etc/fred" });
const refusal = (ingress: unknown, extra: Record<string, unknown> = {}) => {
  try {
    parse(ingress, extra);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("accepted");
};

describe("ingress config", () => {
  let certDir: string;
  before(() => {
    certDir = mkdtempSync(join(tmpdir(), "fred-ingress-cert-"));
  });
  after(() => rmSync(certDir, { recursive: true, force: true }));

  it("accepts the pinned block with its defaults", () => {
    const c = parse({
      enabled: true,
      wildcard_domain: "apps.example.com",
      proxy: "caddy",
      admin_url: "http://127.0.0.1:2019",
      https_listen: ":443",
      tls: "internal",
    }).ingress as IngressConfig;
    assert.equal(c.wildcardDomain, "apps.example.com");
    assert.equal(c.httpsListen, ":443");
    assert.deepEqual(c.tls, { kind: "internal" });
    assert.equal(c.askHost, "127.0.0.1");
    assert.deepEqual(c.dnsResolvers, ["1.1.1.1:53", "8.8.8.8:53", "9.9.9.9:53"]);
    assert.equal(c.dnsQuorum, 2, "majority of three");
    assert.equal(parse({ enabled: false }).ingress, undefined);
    // Relative certificate paths resolve against the config's directory (the files must exist).
    selfSignedCert(certDir, "w", ["*.apps.example.com"]);
    const files = parseDockerBackendConfig(
      {
        ...base,
        ingress: {
          enabled: true,
          wildcard_domain: "apps.example.com",
          tls: { cert_file: "w.crt", key_file: "w.key" },
        },
      },
      { baseDir: certDir },
    ).ingress as IngressConfig;
    assert.deepEqual(files.tls, {
      kind: "files",
      certFile: join(certDir, "w.crt"),
      keyFile: join(certDir, "w.key"),
    });
  });

  it("refuses a files-mode certificate that is missing, unreadable, not its key's, or not for the wildcard, naming the key", () => {
    const good = selfSignedCert(certDir, "good", ["*.apps.example.com"]);
    const other = selfSignedCert(certDir, "other", ["*.elsewhere.example.org"]);
    const narrow = selfSignedCert(certDir, "narrow", ["www.apps.example.com"]);
    const garbage = join(certDir, "garbage.pem");
    writeFileSync(garbage, "not a pem file\n");
    const on = (cert_file: string, key_file: string) => ({
      enabled: true,
      wildcard_domain: "apps.example.com",
      tls: { cert_file, key_file },
    });
    assert.match(
      refusal(on(join(certDir, "missing.crt"), good.key)),
      /ingress\.tls\.cert_file .*missing\.crt/,
    );
    assert.match(refusal(on(garbage, good.key)), /ingress\.tls\.cert_file .*not a readable PEM certificate/);
    assert.match(refusal(on(good.cert, garbage)), /ingress\.tls\.key_file .*not a readable PEM private key/);
    assert.match(refusal(on(good.cert, other.key)), /ingress\.tls\.key_file .*not the key of tls\.cert_file/);
    assert.match(
      refusal(on(other.cert, other.key)),
      /ingress\.tls\.cert_file .*does not cover \*\.apps\.example\.com/,
    );
    assert.match(refusal(on(narrow.cert, narrow.key)), /does not cover/);
    assert.equal((parse(on(good.cert, good.key)).ingress as IngressConfig).tls.kind, "files");
  });

  it("refuses an admin_url off loopback, a public ask listener, Traefik keys and unknown keys, naming the key", () => {
    const on = { enabled: true, wildcard_domain: "apps.example.com" };
    assert.match(refusal({ ...on, admin_url: "http://10.0.0.5:2019" }), /ingress\.admin_url.*not a loopback/);
    assert.match(refusal({ ...on, admin_url: "https://127.0.0.1:2019" }), /admin_url/);
    assert.match(refusal({ ...on, admin_url: "http://127.0.0.1:2019/x" }), /admin_url/);
    assert.equal(
      parse({ ...on, admin_url: "unix///run/caddy/admin.sock" }).ingress?.adminUrl,
      "unix///run/caddy/admin.sock",
    );
    assert.match(refusal({ ...on, ask_listen: "0.0.0.0:9999" }), /ask_listen.*loopback/);
    assert.match(refusal({ ...on, entrypoint: "websecure" }), /ingress\.entrypoint.*https_listen/);
    assert.match(refusal({ ...on, custom_domain_middlewares: ["x"] }), /ingress\.custom_domain_middlewares/);
    assert.match(refusal({ ...on, colour: "blue" }), /colour|unrecognized/i);
    assert.match(refusal({ enabled: true }), /wildcard_domain is required/);
    assert.match(refusal({ ...on, proxy: "traefik" }), /proxy/);
    assert.match(refusal({ ...on, custom_domain_dns_quorum: 4 }), /quorum/);
    assert.match(
      refusal(on, { production_mode: true, tls_cert_file: "a", tls_key_file: "b" }),
      /tls: internal/,
    );
    assert.equal(adminUrlProblem("http://localhost:2019"), undefined);
  });
});

describe("ingress names", () => {
  it("derives one DNS label of at most 63 characters per instance", () => {
    const one = subdomainLabel(LEASE, "web", 0, 1) as string;
    assert.match(one, /^web-[0-9a-f]{7}$/);
    assert.equal(subdomainLabel(LEASE, "web", 0, 1), one, "stable");
    assert.match(subdomainLabel(LEASE, "web", 2, 3) as string, /^web-2-[0-9a-f]{7}$/);
    assert.notEqual(subdomainLabel(LEASE, "web", 1, 3), subdomainLabel(LEASE, "web", 2, 3));
    const long = subdomainLabel(LEASE, "s".repeat(63), 12, 20) as string;
    assert.ok(long.length <= 63, long);
    assert.match(long, /^s+-[0-9a-f]{8}-12-[0-9a-f]{7}$/);
    for (const bad of ["a.b", "Web", "wеb", "-x", "x_y", ""])
      assert.equal(subdomainLabel(LEASE, bad, 0, 1), undefined, bad);
  });

  it("chooses the ingress port: the hint, else 80, else 8080, else the lowest TCP port", () => {
    assert.equal(chooseIngressPort({ ports: ["80/tcp", "9000/tcp"], ingressPort: "9000/tcp" }), 9000);
    assert.equal(chooseIngressPort({ ports: ["8080/tcp", "80/tcp", "22/tcp"] }), 80);
    assert.equal(chooseIngressPort({ ports: ["8080/tcp", "22/tcp"] }), 8080);
    assert.equal(chooseIngressPort({ ports: ["9001/tcp", "53/udp", "9000/tcp"] }), 9000);
    assert.equal(chooseIngressPort({ ports: ["53/udp"] }), undefined);
    assert.equal(chooseIngressPort({ ports: [] }), undefined);
  });

  it("refuses custom domains equal to or under the wildcard domain", () => {
    assert.match(customDomainProblem("apps.example.com", "apps.example.com") as string, /under/);
    assert.match(customDomainProblem("x.apps.example.com", "apps.example.com") as string, /under/);
    assert.equal(customDomainProblem("myapps.example.com", "apps.example.com"), undefined);
    assert.equal(customDomainProblem("shop.tenant.org", "apps.example.com"), undefined);
    assert.match(customDomainProblem("Shop.tenant.org", "apps.example.com") as string, /lowercase/);
  });
});

describe("ingress proxy JSON", () => {
  const ingress = (tls: IngressConfig["tls"], extra: Partial<IngressConfig> = {}): IngressConfig => ({
    wildcardDomain: "apps.example.com",
    adminUrl: "http://127.0.0.1:2019",
    httpsListen: ":443",
    tls,
    askHost: "127.0.0.1",
    askPort: 0,
    healthIntervalMs: 10_000,
    dnsResolvers: [],
    dnsQuorum: 1,
    dnsCheckDisabled: false,
    ...extra,
  });
  const ids = caddyIds("docker-1");

  it("builds a server on https_listen only, without automatic HTTPS, ending in a 404", () => {
    const s = serverJson(ids, ingress({ kind: "internal" }), [
      { host: "b.apps.example.com", dial: "10.0.0.2:80" },
    ]) as {
      listen: string[];
      automatic_https: unknown;
      routes: { handle: { handler: string; status_code?: number }[] }[];
    };
    assert.deepEqual(s.listen, [":443"]);
    assert.deepEqual(s.automatic_https, { disable: true });
    assert.equal(s.routes.at(-1)?.handle[0]?.status_code, 404);
    assert.equal(s.routes[0]?.handle[0]?.handler, "reverse_proxy");
  });

  it("shapes ACME policies (shape only: no public CA is reachable here)", () => {
    const config = ingress(
      { kind: "acme" },
      { acmeEmail: "ops@example.com", acmeCa: "https://acme.example/dir" },
    );
    assert.deepEqual(hostsPolicyJson(ids, config), {
      "@id": "fred-docker-1-hosts",
      subjects: ["*.apps.example.com"],
      issuers: [{ module: "acme", email: "ops@example.com", ca: "https://acme.example/dir" }],
      on_demand: true,
    });
    assert.deepEqual(customPolicyJson(ids, config, ["b.org", "a.org"]), {
      "@id": "fred-docker-1-custom",
      subjects: ["a.org", "b.org"],
      issuers: [{ module: "acme", email: "ops@example.com", ca: "https://acme.example/dir" }],
      on_demand: true,
    });
    assert.equal(customPolicyJson(ids, config, []), undefined, "empty subjects would match every name");
    const files = ingress({ kind: "files", certFile: "/w.crt", keyFile: "/w.key" });
    assert.equal(hostsPolicyJson(ids, files), undefined);
    assert.deepEqual((customPolicyJson(ids, files, ["a.org"]) as { issuers: unknown[] }).issuers, [
      { module: "acme" },
    ]);
    assert.deepEqual(
      (hostsPolicyJson(ids, ingress({ kind: "internal" })) as { issuers: unknown[] }).issuers,
      [{ module: "internal", ca: "fred_docker-1" }],
    );
  });
});

describe("ingress DNS readiness gate", () => {
  let one: TestDns;
  let two: TestDns;
  before(async () => {
    one = await startDns();
    two = await startDns();
  });
  after(async () => {
    await one?.close();
    await two?.close();
  });

  it("needs the quorum of resolvers to answer with an address", async () => {
    const resolvers = [one.address, two.address];
    assert.deepEqual(await dnsReadiness("shop.tenant.test", { resolvers, quorum: 1 }), {
      ready: false,
      resolved: 0,
    });
    one.records.set("shop.tenant.test", "203.0.113.7");
    assert.deepEqual(await dnsReadiness("shop.tenant.test", { resolvers, quorum: 1 }), {
      ready: true,
      resolved: 1,
    });
    assert.deepEqual(await dnsReadiness("shop.tenant.test", { resolvers, quorum: 2 }), {
      ready: false,
      resolved: 1,
    });
    two.records.set("shop.tenant.test", "203.0.113.7");
    assert.deepEqual(await dnsReadiness("shop.tenant.test", { resolvers, quorum: 2 }), {
      ready: true,
      resolved: 2,
    });
    assert.ok(one.queries.includes("shop.tenant.test/1"));
  });
});
