import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { openCosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../../../src/chain/cosmos/signer.ts";
import { MsgSetItemCustomDomain } from "../../../src/chain/proto/index.ts";
import {
  type DockerProcess,
  type DockerTestSetup,
  prepareDockerBackend,
  SECRET,
  spawnDockerBackend,
} from "../../backend/docker/helpers.ts";
import {
  httpsGet,
  httpsServed,
  startCaddy,
  type TestCaddy,
} from "../../backend/docker/ingress/caddy-helper.ts";
import { startDns, type TestDns } from "../../backend/docker/ingress/dns-server.ts";
import { leaseOnNewProvider } from "../../chain/devnet/helpers.ts";
import { dockerSkip } from "../../support/docker.ts";
import { pickFreePort, runFred, until } from "../../support/index.ts";
import { call, TenantKey } from "../api/tenant-client.ts";
import { Stack, sha256 } from "./stack.ts";

/**
 * A tenant's own domain, chain to proxy, every piece a real process: the devnet, providerd,
 * `fred backend docker` and Caddy (internal CA, trusted only by this test's client), with a
 * DNS server on 127.0.0.1 for the readiness gate. `fred chain lease set-domain` on an ACTIVE
 * lease makes the domain answer over HTTPS through the feed's custom-domain event alone:
 * reconciliation_interval is an hour, so no sweep runs after startup. `--clear` removes it,
 * and a domain set on another provider's lease never passes the certificate gate.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd"] });
const WILDCARD = "apps.fred.test";
const BACKEND = "docker-test";
const HTTPD = Buffer.from(JSON.stringify({ image: "fred-test/httpd:1", ports: { "8080/tcp": {} } }));
const hex = (m: Uint8Array) => Buffer.from(sha256(m)).toString("hex");

describe("custom domain: chain → providerd → Docker backend → Caddy", { skip }, () => {
  const stack = new Stack();
  let caddy: TestCaddy;
  let dns: TestDns;
  let httpsPort: number;
  let setup: DockerTestSetup | undefined;
  let backend: DockerProcess | undefined;
  let tenant: TenantKey;
  let lease: string;
  const get = (host: string) => httpsGet(host, httpsPort, caddy.caCert(BACKEND));
  const served = (host: string) => httpsServed(host, httpsPort, caddy.caCert(BACKEND));
  const refused = (a: { status: number }) => a.status < 200 || a.status >= 300;
  const ask = async (domain: string) => {
    const url = (await caddy.config("apps/tls/automation/on_demand/ask")) as string;
    return (await fetch(`${url}?domain=${encodeURIComponent(domain)}`)).status;
  };
  const setDomain = (uuid: string, ...args: string[]) =>
    runFred([
      "chain",
      "lease",
      "set-domain",
      uuid,
      ...args,
      "--from",
      "tenant1",
      "--home",
      join(stack.dir, "devnet"),
      "--rpc",
      stack.devnet.rpc,
    ]);
  const pushes = () =>
    (stack.providerd?.stderr() ?? "")
      .split("\n")
      .filter((l) => l.includes("custom domains sent to the owner backend") && l.includes(lease)).length;

  before(async () => {
    caddy = await startCaddy();
    dns = await startDns();
    httpsPort = await pickFreePort();
    await stack.start(
      () => [],
      async (s) => {
        // The module authority is read at devnet start: restart it with the faucet as the
        // authority (to create a second provider), producing a block every 200 ms.
        await s.devnet.restart({
          args: ["--block-time", "200ms"],
          env: { POA_ADMIN_ADDRESS: s.account("faucet").address },
        });
        setup = prepareDockerBackend({
          name: BACKEND,
          sku_mapping: { [s.sku("docker-small")]: "tiny" },
          sku_profiles: { tiny: { cpu_cores: 0.1, memory_mb: 32, disk_mb: 0 } },
          ingress: {
            enabled: true,
            wildcard_domain: WILDCARD,
            admin_url: caddy.adminUrl,
            https_listen: `127.0.0.1:${httpsPort}`,
            tls: "internal",
            custom_domain_dns_resolvers: [dns.address],
            custom_domain_dns_quorum: 1,
          },
        });
        backend = await spawnDockerBackend(setup.configPath, 120_000);
        s.extraConfig = {
          backends: [{ name: "docker-1", url: backend.ready.url, hmac_secret: SECRET, default: true }],
          // Only the startup pass sweeps: whatever happens later is the event's doing.
          reconciliation_interval: "1h",
        };
      },
    );
    tenant = new TenantKey(stack.account("tenant1").private_key_hex);
    await stack.startProviderd({ FRED_LOG_LEVEL: "info" });
  });

  after(async () => {
    await stack.close();
    await backend?.stop();
    await setup?.cleanup();
    await dns?.close();
    await caddy?.stop();
  });

  it("an ACTIVE lease gets its HTTPS hostname, relayed by GET connection", async () => {
    [lease] = (await stack.createLeases(1, "docker-small", sha256(HTTPD))) as [string];
    const upload = await call(stack.api, `/v1/leases/${lease}/data`, tenant.payload(lease, hex(HTTPD)), {
      method: "POST",
      body: HTTPD,
      headers: { "content-type": "application/octet-stream" },
    });
    assert.equal(upload.status, 202, upload.text);
    await stack.waitState([lease], "LEASE_STATE_ACTIVE", 120_000);
    const conn = await call(stack.api, `/v1/leases/${lease}/connection`, tenant.fresh(lease));
    assert.equal(conn.status, 200, conn.text);
    const fqdn = (conn.body.connection as { fqdn: string }).fqdn;
    assert.match(fqdn, /^app-[0-9a-f]{7}\.apps\.fred\.test$/);
    assert.deepEqual(await served(fqdn), { status: 200, body: "fred-test-httpd\n" });
  });

  it("set-domain routes the domain through the feed event (no sweep); --clear removes it", async () => {
    const domain = `shop-${lease.slice(0, 8)}.tenant.test`;
    dns.records.set(domain, "127.0.0.1");
    assert.equal(await ask(domain), 403, "not set on chain yet");
    assert.equal(pushes(), 0);
    const set = await setDomain(lease, "--domain", domain);
    assert.equal(set.code, 0, set.stderr);
    const answer = await until(
      async () => {
        const a = await get(domain);
        return a.status === 200 && a;
      },
      "the custom domain answers through Caddy",
      { timeoutMs: 30_000, intervalMs: 200, context: () => stack.providerd?.logTail() ?? "" },
    );
    assert.equal(answer.body, "fred-test-httpd\n");
    assert.equal(await ask(domain), 200, "the gate approves a certificate for it");
    assert.equal(pushes(), 1, "providerd sent the event's reconcile_custom_domain");
    const conn = await call(stack.api, `/v1/leases/${lease}/connection`, tenant.fresh(lease));
    assert.equal((conn.body.connection as { fqdn: string }).fqdn, domain, conn.text);

    const cleared = await setDomain(lease, "--clear");
    assert.equal(cleared.code, 0, cleared.stderr);
    await until(async () => (await ask(domain)) === 403, "the gate forgets the cleared domain", {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    assert.ok(refused(await get(domain)), "a cleared domain gets no 2xx");
    assert.equal(pushes(), 2);
  });

  it("a domain set on another provider's lease is refused by the ask gate", async () => {
    const authority = await openCosmosChain({
      rpcUrl: stack.devnet.rpc,
      signer: signerFromKey(Buffer.from(stack.account("faucet").private_key_hex, "hex")),
      txPollIntervalMs: 50,
      txTimeoutMs: 20_000,
    });
    try {
      const { lease: foreign } = await leaseOnNewProvider(
        authority,
        stack.account("tenant1").address,
        stack.tenant,
      );
      const domain = `theirs-${foreign.slice(0, 8)}.tenant.test`;
      dns.records.set(domain, "127.0.0.1");
      // The same message the CLI sends (shown above), without another process start.
      const set = await stack.tenant.send([
        {
          typeUrl: MsgSetItemCustomDomain.typeUrl,
          value: MsgSetItemCustomDomain.fromPartial({
            sender: stack.tenant.address,
            leaseUuid: foreign,
            serviceName: "",
            customDomain: domain,
          }),
        },
      ]);
      assert.equal(set.code, 0, set.rawLog);
      // The tx is committed; a block later our feed has seen whatever it would ever see of it.
      const height = (await stack.tenant.latestBlock()).height + 1;
      await until(async () => (await stack.tenant.latestBlock()).height > height, "two more blocks");
      assert.equal(await ask(domain), 403, "not on a lease of this provider");
      assert.ok(
        !(stack.providerd?.stderr() ?? "").split("\n").some((l) => l.includes(foreign)),
        "providerd never acted on another provider's lease",
      );
      assert.ok(refused(await get(domain)));
    } finally {
      authority.disconnect();
    }
  });
});
