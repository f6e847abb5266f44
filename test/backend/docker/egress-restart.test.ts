import assert from "node:assert/strict";
import type { Server } from "node:http";
import { after, before, describe, it } from "node:test";
import type { RunningDockerBackend } from "../../../src/backend/docker/main.ts";
import { dockerCli, dockerSkip } from "../../support/docker.ts";
import { copyImage, type PrivateEngine, startPrivateEngine } from "../../support/private-dockerd.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import {
  assertPolicy,
  closeOutside,
  closeServer,
  hostOutwardAddress,
  listenOnHost,
  makeOutside,
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
 * The egress policy across a restart of dockerd itself. The shared engine must never be
 * restarted under other files, so this file starts an engine of its own
 * (test/support/private-dockerd.ts) with its own address pool, runs the backend against it,
 * proves every refusal and allowed path of the policy (egress-probes.ts), then stops dockerd
 * (SIGTERM; live-restore off, so the containers stop with it) and starts it again with the
 * same flags. Our nft table must come through untouched (dockerd owns none of it), the
 * backend reports the leases failed once the engine is back (its event supervisor resyncs;
 * it never restarts a workload the platform ended), the leases are provisioned again as
 * providerd does after a failure, and every claim holds again on the re-created containers.
 */
const skip = await dockerSkip({ btrfs: true, privateEngine: true, images: ["httpd"] });

/** No other engine on the host hands out this pool (the shared one uses 10.210/16, userns 10.211/16). */
const POOL = "10.212.0.0/16";

describe("docker backend: egress policy across a dockerd restart (private engine)", { skip }, () => {
  let engine: PrivateEngine | undefined;
  let setup: DockerTestSetup | undefined;
  let backend: RunningDockerBackend | undefined;
  let rx: Receiver | undefined;
  let c: SignedClient;
  let outside: Outside | undefined;
  let hostServer: Server | undefined;
  let hostPort = 0;
  let hostMain = "";
  let tenants: TwoTenants;
  let targets: PolicyTargets;

  const engineCli = () => (engine as PrivateEngine).cli;
  const targetsNow = () =>
    policyTargets({ outside: outside as Outside, engine: engineCli(), tenants, hostMain, hostPort });
  const listTable = async () => {
    const r = await sh("nft", ["-s", "list", "table", "inet", backend?.egress?.table ?? ""]);
    assert.equal(r.code, 0, r.out);
    return r.out;
  };

  before(async () => {
    await removeStaleOutsides();
    engine = await startPrivateEngine(POOL);
    await copyImage(engine, "fred-test/httpd:1");
    setup = prepareDockerBackend({
      docker_host: engine.host,
      host_bind_ip: "0.0.0.0",
      egress: { sweep_interval: "200ms" },
    });
    backend = await startInProcess(setup);
    rx = await startReceiver(SECRET);
    c = signedClient(backend.url, SECRET);
    outside = await makeOutside();
    const host = await listenOnHost();
    hostServer = host.server;
    hostPort = host.port;
    hostMain = await hostOutwardAddress();
    tenants = twoTenants();
    await provisionBoth(c, rx, tenants);
    targets = await targetsNow();
  });

  after(async () => {
    await backend?.close();
    await rx?.close();
    await closeServer(hostServer);
    await closeOutside(outside);
    // The engine first: its containers and networks go with its data root.
    await engine?.remove();
    await setup?.cleanup(); // the egress table and the temp dirs
  });

  it("before the restart: the public host and its own stack only", async () => {
    assert.equal(backend?.egress?.state, "enforcing");
    await assertPolicy(targets, "before dockerd restarts");
  });

  it("after dockerd restarts: the table is untouched and every claim holds on the re-created leases", async () => {
    const r = rx as Receiver;
    const tableBefore = await listTable();
    await engine?.stop();
    await engine?.start();
    assert.equal(await listTable(), tableBefore, "dockerd's restart left our nft table as it was");

    // The containers stopped with the engine; the backend reports each lease failed once it
    // sees the engine again, and providerd's answer to a failure is a provision.
    for (const lease of [tenants.stack.lease, tenants.other.lease, tenants.sibling.lease]) {
      await r.waitFor((rec) => rec.effects.includes(`lifecycle:${lease}:failed`), 60_000);
    }
    await provisionBoth(c, r, tenants);
    targets = await targetsNow();

    // Every lease network of this backend (kept by dockerd across its restart) is in the table.
    const nets = await dockerCli([
      ...engineCli(),
      "network",
      "ls",
      "-q",
      "--no-trunc",
      "--filter",
      `label=fred.storage_id=${setup?.storageId}`,
    ]);
    assert.equal(nets.code, 0, nets.out);
    const ids = nets.out.split(/\s+/).filter(Boolean);
    assert.equal(ids.length, 3, `one network per lease: ${nets.out}`);
    const table = await listTable();
    for (const id of ids) assert.match(table, new RegExp(`"br-${id.slice(0, 12)}"`), table);

    await assertPolicy(targets, "after dockerd restarted");
  });
});
