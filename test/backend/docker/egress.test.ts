import assert from "node:assert/strict";
import type { Server } from "node:http";
import { after, before, describe, it } from "node:test";
import { egressTableName } from "../../../src/backend/docker/egress-rules.ts";
import type { RunningDockerBackend } from "../../../src/backend/docker/main.ts";
import { dockerSkip } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import {
  assertPolicy as assertPolicyOf,
  closeOutside,
  closeServer,
  hostOutwardAddress,
  listenOnHost,
  makeOutside,
  must,
  type Outside,
  type PolicyTargets,
  policyTargets,
  provisionBoth,
  removeStaleOutsides,
  sh,
  type TwoTenants,
  twoTenants,
} from "./egress-probes.ts";
import { type DockerTestSetup, prepareDockerBackend, SECRET, startInProcess } from "./helpers.ts";

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

describe("docker backend: egress policy (nftables)", { skip }, () => {
  let setup: DockerTestSetup;
  let backend: RunningDockerBackend | undefined;
  let rx: Receiver;
  let c: SignedClient;
  let outside: Outside | undefined;
  let hostServer: Server | undefined;
  let tenants: TwoTenants;
  let targets: PolicyTargets;

  before(async () => {
    await removeStaleOutsides();
    setup = prepareDockerBackend({ host_bind_ip: "0.0.0.0", egress: { sweep_interval: "200ms" } });
    backend = await startInProcess(setup);
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
    outside = await makeOutside();
    const host = await listenOnHost();
    hostServer = host.server;
    tenants = twoTenants();
    await provisionBoth(c, rx, tenants);
    targets = await policyTargets({
      outside,
      engine: [],
      tenants,
      hostMain: await hostOutwardAddress(),
      hostPort: host.port,
    });
  });

  after(async () => {
    await backend?.close();
    await rx?.close();
    await closeServer(hostServer);
    await closeOutside(outside);
    await setup?.cleanup(); // containers, networks and the egress table
  });

  const table = () => backend?.egress?.table ?? "";
  const listTable = () => sh("nft", ["-s", "list", "table", "inet", table()]);

  const assertPolicy = (when: string) => assertPolicyOf(targets, when);

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
    assert.ok(new Set(bridgesBefore).size >= 3, (await listTable()).out);
    const cb = signedClient((backend as RunningDockerBackend).url, SECRET);
    for (const lease of [tenants.stack.lease, tenants.other.lease, tenants.sibling.lease]) {
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
