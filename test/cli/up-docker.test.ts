import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { dockerSkip } from "../backend/docker/engine-helper.ts";
import { type Launched, launchFred, runFred } from "../support/index.ts";

/**
 * `fred up --docker` as a newcomer runs it: the walkthrough it prints is followed with the
 * CLI only — deploy the demo image, open it over HTTP, stop, start again and find the
 * same lease serving, then `--reset` removes its containers. Real devnet, real Docker
 * backend, real containers (published on 127.0.0.1 only).
 */
const skip = await dockerSkip();

describe("fred up --docker (npm start on real containers)", { skip }, () => {
  const home = mkdtempSync(join(tmpdir(), "fred-up-docker-"));
  let up: Launched<true> | undefined;
  let keys: string[] = [];
  let lease = "";

  async function startUp(extra: string[] = []): Promise<Launched<true>> {
    const launched = await launchFred<true>(["up", "--docker", "--home", home, ...extra], {
      ready: (line, stream) =>
        stream === "stderr" && line.includes("Press Ctrl-C to stop.") ? true : undefined,
      readyTimeoutMs: 180_000,
    });
    const err = launched.stderr();
    const rpc = /devnet\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(err)?.[1];
    const api = /providerd\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(err)?.[1];
    assert.ok(rpc && api, err.slice(-2000));
    keys = ["--from", "tenant1", "--home", join(home, "devnet"), "--rpc", rpc, "--provider-url", api];
    return launched;
  }

  async function stopUp(): Promise<void> {
    up?.signal("SIGINT");
    const exited = await up?.exited;
    assert.equal(exited?.code, 0, up?.stderr().slice(-2000));
    up = undefined;
  }

  async function page(path = "", of = lease): Promise<string> {
    const connect = await runFred(["lease", "connect", of, ...keys]);
    assert.equal(connect.code, 0, connect.stderr);
    const url = /http:\/\/127\.0\.0\.1:\d+\//.exec(connect.stderr)?.[0];
    assert.ok(url, `connect printed no URL: ${connect.stderr}`);
    return (await fetch(`${url}${path}`)).text();
  }

  before(async () => {
    up = await startUp();
  });

  after(async () => {
    if (up !== undefined) await stopUp().catch(() => {});
    try {
      execFileSync("umount", [join(home, "docker-backend", "volumes")], { stdio: "ignore" });
    } catch {
      // not mounted (not root, or already released by --reset)
    }
    rmSync(home, { recursive: true, force: true });
  });

  it("prints a walkthrough whose deploy command brings the demo up, reachable over HTTP", async () => {
    assert.match(up?.stderr() ?? "", /fred lease deploy --sku docker-small --manifest \S+notes\.json/);
    const deployed = await runFred([
      "lease",
      "deploy",
      "--sku",
      "docker-small",
      "--manifest",
      join(home, "demo", "notes.json"),
      ...keys,
    ]);
    assert.equal(deployed.code, 0, deployed.stderr);
    const status = JSON.parse(deployed.stdout) as Record<string, unknown>;
    assert.equal(status.state, "LEASE_STATE_ACTIVE");
    assert.equal(status.provision_status, "ready");
    lease = String(status.lease_uuid);
    assert.equal((await page()).trim(), "hello from fred");
  });

  it("publishes the demo on 127.0.0.1 only", async () => {
    const connect = JSON.parse((await runFred(["lease", "connect", lease, ...keys])).stdout) as {
      connection: { ports: Record<string, { host_ip: string }> };
    };
    for (const binding of Object.values(connect.connection.ports)) assert.equal(binding.host_ip, "127.0.0.1");
  });

  it("logs show the requests the demo served", async () => {
    const logs = await runFred(["lease", "logs", lease, "--tail", "20", ...keys]);
    assert.equal(logs.code, 0, logs.stderr);
    const body = JSON.parse(logs.stdout) as { logs: Record<string, string> };
    assert.match(Object.values(body.logs).join("\n"), /response:200/);
  });

  it("a second start resumes the same chain and lease", async () => {
    await stopUp();
    up = await startUp();
    const status = await runFred(["lease", "status", lease, ...keys]);
    assert.equal(status.code, 0, status.stderr);
    assert.equal(JSON.parse(status.stdout).state, "LEASE_STATE_ACTIVE");
    assert.equal((await page()).trim(), "hello from fred");
  });

  it("close removes the containers and keeps the data; restore onto a larger tier brings the same data back", async () => {
    const id = (await page("id.txt")).trim();
    assert.match(id, /^[0-9a-f-]{36}$/);
    const closed = await runFred(["lease", "close", lease, ...keys]);
    assert.equal(closed.code, 0, closed.stderr);
    assert.equal(JSON.parse(closed.stdout).state, "LEASE_STATE_CLOSED");
    let status: Record<string, unknown> = {};
    for (let i = 0; i < 60 && status.provision_status !== "retained"; i++) {
      const r = await runFred(["lease", "status", lease, ...keys]);
      status = JSON.parse(r.stdout) as Record<string, unknown>;
      if (status.provision_status !== "retained") await new Promise((d) => setTimeout(d, 500));
    }
    assert.equal(status.provision_status, "retained", JSON.stringify(status));
    const left = execFileSync("docker", ["ps", "-aq", "--filter", `label=fred.lease_uuid=${lease}`], {
      encoding: "utf8",
    });
    assert.equal(left.trim(), "", "the closed lease's containers are gone");

    const restored = await runFred(["lease", "restore", lease, "--sku", "docker-medium", ...keys]);
    assert.equal(restored.code, 0, restored.stderr);
    const target = JSON.parse(restored.stdout) as Record<string, unknown>;
    assert.equal(target.state, "LEASE_STATE_ACTIVE");
    assert.equal(target.provision_status, "ready");
    const into = String(target.lease_uuid);
    assert.equal(
      (await page("id.txt", into)).trim(),
      id,
      "the restored lease serves the data written before close",
    );
    assert.equal(
      (await page("boots.txt", into)).trim().split("\n").length,
      2,
      "one boot before close, one after restore",
    );

    lease = into; // --reset below removes its container
  });

  it("--reset starts over and removes the old chain's containers", async () => {
    await stopUp();
    up = await startUp(["--reset"]);
    assert.match(up.stderr(), /removed 1 demo container/);
    const left = execFileSync("docker", ["ps", "-aq", "--filter", `label=fred.lease_uuid=${lease}`], {
      encoding: "utf8",
    });
    assert.equal(left.trim(), "");
    const status = await runFred(["lease", "status", lease, ...keys]);
    assert.equal(status.code, 1, "the new chain does not know the old lease");
  });
});
