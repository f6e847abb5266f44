import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { egressTableName } from "../../../src/backend/docker/egress-rules.ts";
import type { RunningDockerBackend } from "../../../src/backend/docker/main.ts";
import { instanceName } from "../../../src/backend/docker/names.ts";
import { dockerCli, dockerSkip, execIn } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import {
  type DockerTestSetup,
  httpdManifest,
  manifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  startInProcess,
} from "./helpers.ts";
import { provisionAndWait, provisionBody } from "./provision-helper.ts";

/**
 * The egress policy on the real kernel and the real engine: a tenant container reaches the
 * public internet (here a network namespace holding a TEST-NET address, routed from the
 * host) and its own stack, and nothing inside the provider: not a port the host binds on
 * 0.0.0.0, not 169.254.169.254 or a private address (both held by that namespace), not
 * another tenant's container by its address or its published port. All of it again after the
 * backend restarts with its table gone, and after the table is flushed or deleted under a
 * running backend (the sweep loads it again). Every probe first shows from the host that
 * its target answers, so a refusal is the firewall's doing. Traffic goes only to loopback,
 * the test's namespace and the test's containers.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd"] });

function sh(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { timeout: 15_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    ),
  );
}

async function must(cmd: string, args: string[]): Promise<string> {
  const r = await sh(cmd, args);
  assert.equal(r.code, 0, `${cmd} ${args.join(" ")}: ${r.out}`);
  return r.out;
}

/** A namespace standing for the world outside the host: public, metadata and private addresses. */
interface Outside {
  ns: string;
  hostVeth: string;
  publicIp: string;
  metadataIp: string;
  privateIp: string;
  httpd: ChildProcess;
  www: string;
}

const PREFIX = "fredeg-";

async function removeOutside(ns: string, hostVeth: string): Promise<void> {
  // Deleting the namespace deletes its veth end, which takes the host end and its routes.
  await sh("ip", ["netns", "delete", ns]);
  await sh("ip", ["link", "delete", hostVeth]);
}

async function makeOutside(): Promise<Outside> {
  const tag = randomBytes(3).toString("hex");
  const ns = `${PREFIX}${tag}`;
  const hostVeth = `fegh${tag}`;
  const nsVeth = `fegn${tag}`;
  const slot = randomBytes(1).readUInt8(0) % 60; // a /30 inside 198.51.100.0/24
  const hostIp = `198.51.100.${slot * 4 + 1}`;
  const publicIp = `198.51.100.${slot * 4 + 2}`;
  const metadataIp = "169.254.169.254";
  const privateIp = `192.168.213.${slot + 10}`;
  try {
    return await buildOutside({ ns, hostVeth, nsVeth, hostIp, publicIp, metadataIp, privateIp });
  } catch (err) {
    await removeOutside(ns, hostVeth); // half-built: nothing of it may stay behind
    throw err;
  }
}

async function buildOutside(o: {
  ns: string;
  hostVeth: string;
  nsVeth: string;
  hostIp: string;
  publicIp: string;
  metadataIp: string;
  privateIp: string;
}): Promise<Outside> {
  const { ns, hostVeth, nsVeth, hostIp, publicIp, metadataIp, privateIp } = o;
  await must("ip", ["netns", "add", ns]);
  await must("ip", ["link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth, "netns", ns]);
  await must("ip", ["addr", "add", `${hostIp}/30`, "dev", hostVeth]);
  await must("ip", ["link", "set", hostVeth, "up"]);
  const inNs = (...args: string[]) => must("ip", ["netns", "exec", ns, ...args]);
  await inNs("ip", "link", "set", "lo", "up");
  await inNs("ip", "addr", "add", `${publicIp}/30`, "dev", nsVeth);
  await inNs("ip", "addr", "add", `${metadataIp}/32`, "dev", nsVeth);
  await inNs("ip", "addr", "add", `${privateIp}/32`, "dev", nsVeth);
  await inNs("ip", "link", "set", nsVeth, "up");
  await inNs("ip", "route", "add", "default", "via", hostIp);
  await must("ip", ["route", "add", `${metadataIp}/32`, "dev", hostVeth]);
  await must("ip", ["route", "add", `${privateIp}/32`, "dev", hostVeth]);
  const www = mkdtempSync(join(tmpdir(), "fred-egress-www-"));
  writeFileSync(join(www, "index.html"), "outside-ok\n");
  const httpd = spawn("ip", ["netns", "exec", ns, "busybox", "httpd", "-f", "-p", "8080", "-h", www], {
    stdio: "ignore",
  });
  return { ns, hostVeth, publicIp, metadataIp, privateIp, httpd, www };
}

/**
 * `wget` inside a container; exit code and output. Refusals are rejects, so they come at once;
 * `timeout` only bounds a hang (busybox's own `wget -T` crashes in the static build).
 */
function wgetFrom(container: string, url: string) {
  return execIn(container, `timeout 5 wget -q -O- ${url}`);
}

async function hostFetch(url: string): Promise<string> {
  return until(
    async () => {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
        return res.ok ? await res.text() : false;
      } catch {
        return false;
      }
    },
    `${url} to answer the host`,
    20_000,
  );
}

describe("docker backend: egress policy (nftables)", { skip }, () => {
  let setup: DockerTestSetup;
  let backend: RunningDockerBackend | undefined;
  let rx: Receiver;
  let c: SignedClient;
  let outside: Outside | undefined;
  let hostServer: Server | undefined;
  let hostPort = 0;
  const tenantA = `manifest1ega${randomBytes(6).toString("hex")}`;
  const tenantB = `manifest1egb${randomBytes(6).toString("hex")}`;
  let stackLease = "";
  let otherLease = "";
  let client = "";
  let gatewayA = "";
  let hostMain = "";
  let otherIp = "";
  let otherHostPort = "";
  const items = (names: string[]) => names.map((service_name) => ({ sku: SKU, quantity: 1, service_name }));

  before(async () => {
    // Namespaces of an earlier run that died before its cleanup.
    for (const line of (await sh("ip", ["netns", "list"])).out.split("\n")) {
      const name = line.split(" ")[0] ?? "";
      if (name.startsWith(PREFIX)) await removeOutside(name, `fegh${name.slice(PREFIX.length)}`);
    }
    setup = prepareDockerBackend({ host_bind_ip: "0.0.0.0", egress: { sweep_interval: "200ms" } });
    backend = await startInProcess(setup);
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
    outside = await makeOutside();
    hostServer = createServer((_req, res) => res.end("host-ok\n"));
    await new Promise<void>((resolve) => hostServer?.listen(0, "0.0.0.0", resolve));
    hostPort = (hostServer.address() as AddressInfo).port;

    const stack = provisionBody(
      rx,
      manifest({
        web: { image: "fred-test/httpd:1", ports: { "8080/tcp": {} } },
        client: { image: "fred-test/httpd:1" },
      }),
      items(["client", "web"]),
      { tenant: tenantA },
    );
    const other = provisionBody(rx, httpdManifest("web"), items(["web"]), { tenant: tenantB });
    stackLease = stack.lease;
    otherLease = other.lease;
    assert.equal((await provisionAndWait(c, rx, stack)).status, "success");
    assert.equal((await provisionAndWait(c, rx, other)).status, "success");
    client = instanceName(stackLease, "client", 0);
    // The host's own outward address (no packet is sent by `route get`).
    hostMain = /\bsrc (\S+)/.exec(await must("ip", ["-4", "route", "get", "1.1.1.1"]))?.[1] ?? "";
    assert.ok(hostMain, "the host has an outward IPv4 address");
    const inspect = (format: string, target: string[]) =>
      dockerCli(["inspect", "-f", format, ...target]).then((r) => {
        assert.equal(r.code, 0, r.out);
        return r.out.trim();
      });
    gatewayA = await inspect("{{range .NetworkSettings.Networks}}{{.Gateway}}{{end}}", [client]);
    const otherContainer = instanceName(otherLease, "web", 0);
    otherIp = await inspect("{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", [otherContainer]);
    otherHostPort = await inspect('{{(index (index .NetworkSettings.Ports "8080/tcp") 0).HostPort}}', [
      otherContainer,
    ]);
  });

  after(async () => {
    await backend?.close();
    await rx?.close();
    await new Promise<void>((resolve) => (hostServer ? hostServer.close(() => resolve()) : resolve()));
    if (outside) {
      outside.httpd.kill();
      await removeOutside(outside.ns, outside.hostVeth);
      rmSync(outside.www, { recursive: true, force: true });
    }
    await setup?.cleanup(); // containers, networks and the egress table
  });

  const table = () => backend?.egress?.table ?? "";
  const listTable = () => sh("nft", ["-s", "list", "table", "inet", table()]);

  /** Every claim of the policy, from tenant A's client container. */
  async function assertPolicy(when: string): Promise<void> {
    const o = outside as Outside;
    // Controls: each target answers from the host.
    assert.match(await hostFetch(`http://${o.publicIp}:8080/`), /outside-ok/);
    assert.match(await hostFetch(`http://${o.metadataIp}:8080/`), /outside-ok/);
    assert.match(await hostFetch(`http://${o.privateIp}:8080/`), /outside-ok/);
    assert.match(await hostFetch(`http://127.0.0.1:${hostPort}/`), /host-ok/);
    assert.match(await hostFetch(`http://127.0.0.1:${otherHostPort}/`), /fred-test-httpd/);

    const reach = await wgetFrom(client, `http://${o.publicIp}:8080/`);
    assert.equal(reach.code, 0, `${when}: the public test host must be reachable: ${reach.out}`);
    assert.match(reach.out, /outside-ok/);
    const own = await wgetFrom(client, "http://web:8080/");
    assert.equal(own.code, 0, `${when}: the stack's own web service must be reachable: ${own.out}`);
    assert.match(own.out, /fred-test-httpd/);

    const refused: Record<string, string> = {
      "the host's port on its tenant-network gateway": `http://${gatewayA}:${hostPort}/`,
      "the host's port on its outward address": `http://${hostMain}:${hostPort}/`,
      "the metadata address": `http://${o.metadataIp}:8080/`,
      "a private address": `http://${o.privateIp}:8080/`,
      "another tenant's container": `http://${otherIp}:8080/`,
      "another tenant's published port": `http://${gatewayA}:${otherHostPort}/`,
      "another tenant's published port on the host's outward address": `http://${hostMain}:${otherHostPort}/`,
    };
    for (const [what, url] of Object.entries(refused)) {
      const r = await wgetFrom(client, url);
      assert.notEqual(r.code, 0, `${when}: ${what} (${url}) must be refused, got: ${r.out}`);
      assert.doesNotMatch(r.out, /outside-ok|host-ok|fred-test-httpd/, `${when}: ${what}`);
    }
  }

  async function metric(name: string): Promise<number> {
    const text = await (await fetch(`${backend?.url}/metrics`)).text();
    const m = new RegExp(`^${name} (\\d+)`, "m").exec(text);
    return m ? Number(m[1]) : Number.NaN;
  }

  it("a tenant reaches the public test host and its own stack, and nothing inside the provider", async () => {
    assert.equal(backend?.egress?.state, "enforcing");
    const listing = await listTable();
    assert.equal(listing.code, 0, listing.out);
    assert.match(listing.out, /hook forward priority filter - 10/);
    assert.equal(await metric("fred_egress_enforced"), 1);
    assert.ok((await metric("fred_egress_rulesets_applied_total")) >= 1);
    await assertPolicy("running");
  });

  it("the sweep loads the table again after it is flushed, and after it is deleted", async () => {
    const before = await metric("fred_egress_sweep_repairs_total");
    const whole = (await listTable()).out;
    await must("nft", ["flush", "table", "inet", table()]);
    await until(async () => (await listTable()).out === whole, "the sweep to restore the flushed table");
    await assertPolicy("after a flush");
    await must("nft", ["delete", "table", "inet", table()]);
    await until(async () => (await listTable()).out === whole, "the sweep to restore the deleted table");
    await assertPolicy("after a delete");
    assert.ok((await metric("fred_egress_sweep_repairs_total")) >= before + 2);
  });

  it("a backend restart finds the table gone and loads it before it serves", async () => {
    await backend?.close();
    backend = undefined;
    await must("nft", ["delete", "table", "inet", egressTableName(setup.storageId)]);
    backend = await startInProcess(setup);
    assert.equal(backend.egress?.state, "enforcing");
    assert.equal((await listTable()).code, 0, "the table is back once the start returned");
    await assertPolicy("after a backend restart");
  });

  it("closing the leases removes their bridges from the table", async () => {
    const bridgesBefore = (await listTable()).out.match(/"br-[0-9a-f]{12}"/g) ?? [];
    assert.ok(new Set(bridgesBefore).size >= 2, (await listTable()).out);
    const cb = signedClient((backend as RunningDockerBackend).url, SECRET);
    for (const lease of [stackLease, otherLease]) {
      const res = await cb.post("/deprovision", { lease_uuid: lease });
      assert.equal(res.status, 200, `deprovision ${lease}: ${res.text}`);
    }
    await until(
      async () => !/"br-/.test((await listTable()).out),
      "the tenant bridges to leave the table",
      60_000,
    );
  });
});
