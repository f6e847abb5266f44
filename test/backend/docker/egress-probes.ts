import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { instanceName } from "../../../src/backend/docker/names.ts";
import { dockerCli } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import type { Receiver } from "../kit/receiver.ts";
import type { SignedClient } from "../kit/signed-client.ts";
import { httpdManifest, manifest, SKU } from "./helpers.ts";
import { provisionAndWait, provisionBody } from "./provision-helper.ts";

/**
 * What the egress suites share (egress.test.ts on the shared engine, egress-restart.test.ts
 * on a private one): the namespace standing for the world outside the host, a listener on a
 * host port bound on 0.0.0.0, the two tenants' leases, and the probes of every claim of the
 * policy from tenant A's client container. `engine` is the docker CLI's global arguments for
 * the engine the leases run on (empty for the shared one).
 */

export function sh(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { timeout: 15_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    ),
  );
}

export async function must(cmd: string, args: string[]): Promise<string> {
  const r = await sh(cmd, args);
  assert.equal(r.code, 0, `${cmd} ${args.join(" ")}: ${r.out}`);
  return r.out;
}

/** A namespace standing for the world outside the host: public, metadata and private addresses. */
export interface Outside {
  ns: string;
  hostVeth: string;
  publicIp: string;
  metadataIp: string;
  privateIp: string;
  httpd: ChildProcess;
  www: string;
}

const PREFIX = "fredeg-";

export async function removeOutside(ns: string, hostVeth: string): Promise<void> {
  // Deleting the namespace deletes its veth end, which takes the host end and its routes.
  await sh("ip", ["netns", "delete", ns]);
  await sh("ip", ["link", "delete", hostVeth]);
}

/** Namespaces of an earlier run that died before its cleanup. */
export async function removeStaleOutsides(): Promise<void> {
  for (const line of (await sh("ip", ["netns", "list"])).out.split("\n")) {
    const name = line.split(" ")[0] ?? "";
    if (name.startsWith(PREFIX)) await removeOutside(name, `fegh${name.slice(PREFIX.length)}`);
  }
}

export async function makeOutside(): Promise<Outside> {
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

export async function closeOutside(outside: Outside | undefined): Promise<void> {
  if (!outside) return;
  outside.httpd.kill();
  await removeOutside(outside.ns, outside.hostVeth);
  rmSync(outside.www, { recursive: true, force: true });
}

/** A listener on 0.0.0.0, standing for every service the host binds on all its addresses. */
export async function listenOnHost(): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => res.end("host-ok\n"));
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

export function closeServer(server: Server | undefined): Promise<void> {
  return new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
}

/** The host's own outward IPv4 address (no packet is sent by `route get`). */
export async function hostOutwardAddress(): Promise<string> {
  const addr = /\bsrc (\S+)/.exec(await must("ip", ["-4", "route", "get", "1.1.1.1"]))?.[1] ?? "";
  assert.ok(addr, "the host has an outward IPv4 address");
  return addr;
}

/** One tenant's lease as the test provisions it: the same each time it is provisioned. */
export interface TenantLease {
  lease: string;
  tenant: string;
  payload: Uint8Array;
  items: unknown[];
}

/**
 * Tenant A's stack (a `web` service publishing 8080 and a `client` beside it), tenant B's
 * single `web`, and a second lease of tenant A (`sibling`) whose service is named `web` too:
 * each lease has a network of its own, so the stack's `web` is its own and the sibling is
 * as far away as tenant B.
 */
export interface TwoTenants {
  stack: TenantLease;
  other: TenantLease;
  sibling: TenantLease;
}

export function twoTenants(): TwoTenants {
  const t = leases();
  t.sibling.tenant = t.stack.tenant;
  return t;
}

function leases(): TwoTenants {
  const items = (names: string[]) => names.map((service_name) => ({ sku: SKU, quantity: 1, service_name }));
  return {
    stack: {
      lease: randomUUID(),
      tenant: `manifest1ega${randomBytes(6).toString("hex")}`,
      payload: manifest({
        web: { image: "fred-test/httpd:1", ports: { "8080/tcp": {} } },
        client: { image: "fred-test/httpd:1" },
      }),
      items: items(["client", "web"]),
    },
    other: {
      lease: randomUUID(),
      tenant: `manifest1egb${randomBytes(6).toString("hex")}`,
      payload: httpdManifest("web"),
      items: items(["web"]),
    },
    sibling: {
      lease: randomUUID(),
      tenant: "",
      payload: httpdManifest("web"),
      items: items(["web"]),
    },
  };
}

/**
 * Provisions both tenants' leases and waits until each succeeded; called again after the
 * leases failed, it provisions them anew (each call is a new operation), as providerd does.
 */
export async function provisionBoth(c: SignedClient, rx: Receiver, t: TwoTenants): Promise<void> {
  for (const { lease, tenant, payload, items } of [t.stack, t.other, t.sibling]) {
    const call = provisionBody(rx, payload, items, { lease, tenant });
    assert.equal((await provisionAndWait(c, rx, call)).status, "success", `provision ${lease}`);
  }
}

/** Everything the probes aim at, read once the leases run (addresses change with a re-create). */
export interface PolicyTargets {
  outside: Outside;
  engine: string[];
  client: string;
  gatewayA: string;
  hostMain: string;
  hostPort: number;
  otherIp: string;
  otherHostPort: string;
  /** The stack's own `web` container's address (its name must resolve to this alone). */
  webIp: string;
  siblingIp: string;
  siblingHostPort: string;
}

export async function policyTargets(o: {
  outside: Outside;
  engine: string[];
  tenants: TwoTenants;
  hostMain: string;
  hostPort: number;
}): Promise<PolicyTargets> {
  const inspect = (format: string, target: string) =>
    dockerCli([...o.engine, "inspect", "-f", format, target]).then((r) => {
      assert.equal(r.code, 0, r.out);
      return r.out.trim();
    });
  const client = instanceName(o.tenants.stack.lease, "client", 0);
  const otherContainer = instanceName(o.tenants.other.lease, "web", 0);
  const siblingContainer = instanceName(o.tenants.sibling.lease, "web", 0);
  const ip = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}";
  const hostPort = '{{(index (index .NetworkSettings.Ports "8080/tcp") 0).HostPort}}';
  return {
    outside: o.outside,
    engine: o.engine,
    client,
    hostMain: o.hostMain,
    hostPort: o.hostPort,
    gatewayA: await inspect("{{range .NetworkSettings.Networks}}{{.Gateway}}{{end}}", client),
    otherIp: await inspect(ip, otherContainer),
    otherHostPort: await inspect(hostPort, otherContainer),
    webIp: await inspect(ip, instanceName(o.tenants.stack.lease, "web", 0)),
    siblingIp: await inspect(ip, siblingContainer),
    siblingHostPort: await inspect(hostPort, siblingContainer),
  };
}

/**
 * `wget` inside a container; exit code and output. Refusals are rejects, so they come at once;
 * `timeout` only bounds a hang (busybox's own `wget -T` crashes in the static build).
 */
function wgetFrom(engine: string[], container: string, url: string) {
  return dockerCli([...engine, "exec", container, "sh", "-c", `timeout 5 wget -q -O- ${url}`]);
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

/**
 * Every claim of the policy, from tenant A's client container. Each target first shows from
 * the host that it answers, so a refusal is the firewall's doing.
 */
export async function assertPolicy(t: PolicyTargets, when: string): Promise<void> {
  const o = t.outside;
  assert.match(await hostFetch(`http://${o.publicIp}:8080/`), /outside-ok/);
  assert.match(await hostFetch(`http://${o.metadataIp}:8080/`), /outside-ok/);
  assert.match(await hostFetch(`http://${o.privateIp}:8080/`), /outside-ok/);
  assert.match(await hostFetch(`http://127.0.0.1:${t.hostPort}/`), /host-ok/);
  assert.match(await hostFetch(`http://127.0.0.1:${t.otherHostPort}/`), /fred-test-httpd/);

  const reach = await wgetFrom(t.engine, t.client, `http://${o.publicIp}:8080/`);
  assert.equal(reach.code, 0, `${when}: the public test host must be reachable: ${reach.out}`);
  assert.match(reach.out, /outside-ok/);
  const own = await wgetFrom(t.engine, t.client, "http://web:8080/");
  assert.equal(own.code, 0, `${when}: the stack's own web service must be reachable: ${own.out}`);
  assert.match(own.out, /fred-test-httpd/);
  // The sibling lease's service is named `web` too: the name must be this lease's alone.
  const lookup = await dockerCli([...t.engine, "exec", t.client, "nslookup", "web"]);
  const answers = [...(lookup.out.split("Name:")[1]?.matchAll(/Address:\s*([0-9.]+)/g) ?? [])].map(
    (m) => m[1],
  );
  assert.deepEqual(answers, [t.webIp], `${when}: "web" resolves to the stack's own web only: ${lookup.out}`);

  const refused: Record<string, string> = {
    "the host's port on its tenant-network gateway": `http://${t.gatewayA}:${t.hostPort}/`,
    "the host's port on its outward address": `http://${t.hostMain}:${t.hostPort}/`,
    "the metadata address": `http://${o.metadataIp}:8080/`,
    "a private address": `http://${o.privateIp}:8080/`,
    "another tenant's container": `http://${t.otherIp}:8080/`,
    "another tenant's published port": `http://${t.gatewayA}:${t.otherHostPort}/`,
    "another tenant's published port on the host's outward address": `http://${t.hostMain}:${t.otherHostPort}/`,
    "another lease of the same tenant": `http://${t.siblingIp}:8080/`,
    "another lease of the same tenant, by its published port": `http://${t.gatewayA}:${t.siblingHostPort}/`,
  };
  for (const [what, url] of Object.entries(refused)) {
    const r = await wgetFrom(t.engine, t.client, url);
    assert.notEqual(r.code, 0, `${when}: ${what} (${url}) must be refused, got: ${r.out}`);
    assert.doesNotMatch(r.out, /outside-ok|host-ok|fred-test-httpd/, `${when}: ${what}`);
  }
}
