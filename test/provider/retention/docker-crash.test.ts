import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { instanceName } from "../../../src/backend/docker/names.ts";
import type { RetentionCrashPoint } from "../../../src/backend/kit/index.ts";
import {
  type DockerProcess,
  type DockerTestSetup,
  prepareDockerBackend,
  SECRET,
  spawnDockerBackend,
} from "../../backend/docker/helpers.ts";
import { metric, withStore } from "../../faults/fleet.ts";
import { dockerSkip, execIn } from "../../support/docker.ts";
import { pickFreePort, until } from "../../support/index.ts";
import { TenantKey } from "../api/tenant-client.ts";
import { Stack, sha256 } from "../e2e/stack.ts";

/**
 * providerd's view after the real Docker backend is killed (-9) inside retention: a devnet,
 * providerd and `fred backend docker` on btrfs, the backend restarted on the same port with
 * the next crash point armed. A retaining close killed after its row commits (callback not
 * sent) still shows the lease retained; a restore killed after the clone is failed by the
 * backend's recovery (the target rejected RestoreFailed, the data back with the source); a
 * restore killed after the source row is consumed ends ACTIVE with the file the first lease
 * wrote, and after a complete sweep providerd routes nothing to the consumed source.
 */
const skip = await dockerSkip({ btrfs: true, images: ["volume"] });
const MANIFEST = Buffer.from(JSON.stringify({ image: "fred-test/volume:1", stop_grace_period: "1s" }));
const HASH = sha256(MANIFEST);
const HASH_HEX = Buffer.from(HASH).toString("hex");

describe("retention on the real Docker backend killed -9 (devnet + providerd + fred backend docker)", {
  skip,
}, () => {
  const stack = new Stack();
  let setup: DockerTestSetup | undefined;
  let backend: DockerProcess | undefined;
  let tenant: TenantKey;
  const context = () => `${backend?.logTail() ?? ""}\n${stack.providerd?.logTail() ?? ""}`;

  /** Restarts the backend on its port with `point` armed (none: a clean life). */
  const life = async (point?: RetentionCrashPoint) => {
    backend = await spawnDockerBackend(
      (setup as DockerTestSetup).configPath,
      120_000,
      point ? { FRED_FAILPOINTS: point } : {},
    );
  };
  const died = async () => {
    const exit = await (backend as DockerProcess).waitExit(120_000);
    assert.equal(exit.signal, "SIGKILL", context());
  };

  before(async () => {
    const port = await pickFreePort();
    await stack.start(
      () => [],
      async (s) => {
        setup = prepareDockerBackend({
          listen_addr: `127.0.0.1:${port}`,
          retain_on_close: true,
          sku_mapping: { [s.sku("docker-medium")]: "disk" },
          sku_profiles: { disk: { cpu_cores: 0.1, memory_mb: 32, disk_mb: 16 } },
        });
        await life();
        s.extraConfig = {
          backends: [
            { name: "docker-1", url: `http://127.0.0.1:${port}`, hmac_secret: SECRET, default: true },
          ],
          reconciliation_interval: "1h",
        };
      },
    );
    tenant = new TenantKey(stack.account("tenant1").private_key_hex);
    await stack.startProviderd({ FRED_LOG_LEVEL: "info" });
  });

  after(async () => {
    await stack.close();
    await backend?.kill();
    await setup?.cleanup();
  });

  const status = async (lease: string) => {
    const res = await fetch(`${stack.api}/v1/leases/${lease}/status`, {
      headers: { authorization: `Bearer ${tenant.fresh(lease)}` },
    });
    return (await res.json()) as Record<string, unknown>;
  };
  const restore = async (target: string, from: string) => {
    const res = await fetch(`${stack.api}/v1/leases/${target}/restore`, {
      method: "POST",
      body: JSON.stringify({ from_lease_uuid: from }),
      headers: { authorization: `Bearer ${tenant.fresh(target)}`, "content-type": "application/json" },
    });
    return { status: res.status, text: await res.text() };
  };
  const sweep = async () => {
    const before = await metric(stack, "fred_reconciler_runs_total", 'outcome="complete"');
    stack.providerd?.signal("SIGUSR1");
    await until(
      async () => (await metric(stack, "fred_reconciler_runs_total", 'outcome="complete"')) > before,
      "a complete sweep",
      { context, timeoutMs: 60_000 },
    );
  };

  it("converges to one holder of the data after each kill", async () => {
    const [source] = await stack.createLeases(1, "docker-medium", HASH);
    const up = await fetch(`${stack.api}/v1/leases/${source}/data`, {
      method: "POST",
      body: MANIFEST,
      headers: { authorization: `Bearer ${tenant.payload(source!, HASH_HEX)}` },
    });
    assert.equal(up.status, 202, await up.text());
    await stack.waitState([source!], "LEASE_STATE_ACTIVE", 120_000);
    const write = await execIn(instanceName(source!, "app", 0), "echo tenant-data > /data/keep.txt && sync");
    assert.equal(write.code, 0, write.out);

    // The close: killed once its row is committed, before the retained callback leaves.
    await backend?.stop();
    await life("retention.close.after-commit");
    await stack.tenant.closeLeases([source!], "done for now");
    await died();
    await life("retention.restore.after-clone");
    await until(
      async () => (await status(source!)).provision_status === "retained",
      "retained after restart",
      {
        context,
        timeoutMs: 60_000,
      },
    );

    // A restore killed after the clone: recovery fails it, the target is rejected, the data stays.
    const [lost] = await stack.createLeases(1, "docker-medium", HASH);
    const first = await restore(lost!, source!);
    assert.ok([202, 500].includes(first.status), first.text);
    await died();
    await life("retention.restore.after-consume");
    await stack.waitState([lost!], "LEASE_STATE_REJECTED", 60_000);
    assert.equal((await status(lost!)).provision_status, "failed");
    assert.equal((await status(source!)).provision_status, "retained");

    // A restore killed after the source row is consumed: ACTIVE after the restart, with the data.
    const [target] = await stack.createLeases(1, "docker-medium", HASH);
    const second = await restore(target!, source!);
    assert.equal(second.status, 202, second.text);
    await died();
    await life();
    await stack.waitState([target!], "LEASE_STATE_ACTIVE", 60_000);
    const read = await execIn(instanceName(target!, "app", 0), "cat /data/keep.txt");
    assert.equal(read.out, "tenant-data\n", read.out);
    await sweep();
    const rows = withStore(stack, (s) => ({
      source: s.placements.placement(source!),
      target: s.placements.placement(target!),
      lost: s.placements.placement(lost!),
      lostRetained: s.placements.retained.get(lost!),
    }));
    assert.equal(rows.source, undefined, "the consumed source's row is retired");
    assert.equal(rows.target?.state, "confirmed");
    assert.equal(rows.target?.owner, "docker-1");
    // The rejected target keeps no retained row. Its placement, until the sweep prunes it,
    // only says where the failed restore ran, with no lifecycle a teardown could act on.
    assert.equal(rows.lostRetained, undefined, "the rejected target holds nothing");
    assert.equal(rows.lost?.lifecycleId, undefined);
    const [again] = await stack.createLeases(1, "docker-medium", HASH);
    assert.equal((await restore(again!, source!)).status, 404, "nothing left to restore");
  });
});
