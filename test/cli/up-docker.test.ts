import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Agent, fetch as fetchTls } from "undici";
import { DEMO_IMAGE } from "../../src/cli/up/demo-image.ts";
import { hasCaddy } from "../../src/cli/up/local-caddy.ts";
import { httpsGet } from "../backend/docker/ingress/caddy-helper.ts";
import { signedClient } from "../backend/kit/signed-client.ts";
import { keplrAccessToken, keplrPayloadToken } from "../provider/api/keplr-token.ts";
import { dockerSkip } from "../support/docker.ts";
import { type Launched, launchFred, runFred, until } from "../support/index.ts";

/**
 * `fred up --docker` as a newcomer runs it: the walkthrough it prints is followed with the
 * CLI only — deploy the demo image, open it over HTTP, update, restart, close and restore,
 * stop and start again (on the same btrfs as a --volume-path, with a short retention age)
 * and find the restored lease serving, close it for good and see every trace go, then
 * `--reset` removes the old chain's containers. `fred lease` names no provider URL: it
 * finds providerd through the provider record on chain and trusts fred up's local CA.
 * Real devnet, real Docker backend, real containers (published on 127.0.0.1 only).
 */
/**
 * fred up's banner with its 80-column folds undone: a folded command's " \" continuation
 * and every hanging-indent line are joined back, so a pattern can span what was one line.
 */
function unfolded(text: string): string {
  return text.replace(/ \\\n\s+/g, " ").replace(/\n {5,}(?=\S)/g, " ");
}

const skip = await dockerSkip({ ownBtrfs: true });

describe("fred up --docker (npm start on real containers)", { skip }, () => {
  const home = mkdtempSync(join(tmpdir(), "fred-up-docker-"));
  let up: Launched<true> | undefined;
  let keys: string[] = [];
  let api = "";
  let backend = "";
  let lease = "";
  const volumeData = join(home, "docker-backend", "volumes", "data");

  async function startUp(flags: string[] = ["--docker"]): Promise<Launched<true>> {
    const launched = await launchFred<true>(["up", "--home", home, ...flags], {
      ready: (line, stream) =>
        stream === "stderr" && line.includes("Press Ctrl-C to stop.") ? true : undefined,
      readyTimeoutMs: 180_000,
    });
    const err = unfolded(launched.stderr());
    const rpc = /devnet\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(err)?.[1];
    const url = /providerd\s+(https:\/\/127\.0\.0\.1:\d+)/.exec(err)?.[1];
    const backendUrl = /docker backend (http:\/\/127\.0\.0\.1:\d+)/.exec(err)?.[1];
    assert.ok(rpc && url && backendUrl, err.slice(-2000));
    assert.match(err, /provider record on chain: api_url https:/);
    api = url;
    backend = backendUrl;
    keys = ["--from", "tenant1", "--home", join(home, "devnet"), "--rpc", rpc];
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

  /** The walkthrough's deploy command: the demo manifest on docker-small. */
  async function deployDemo() {
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
    return deployed;
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
    assert.match(
      unfolded(up?.stderr() ?? ""),
      /fred lease deploy --sku docker-small --manifest \S+notes\.json/,
    );
    const deployed = await deployDemo();
    const status = JSON.parse(deployed.stdout) as Record<string, unknown>;
    assert.equal(status.state, "LEASE_STATE_ACTIVE");
    assert.equal(status.provision_status, "ready");
    lease = String(status.lease_uuid);
    assert.equal((await page()).trim(), "hello from fred");
  });

  it("with caddy installed, connect prints the demo's https name through the ingress proxy, as the walkthrough opens it", async () => {
    const err = unfolded(up?.stderr() ?? "");
    if (!hasCaddy()) {
      assert.match(err, /no caddy on PATH: web services answer on http:\/\/127\.0\.0\.1:<port> only/);
      return;
    }
    const listen =
      /ingress: https:\/\/<name>\.fred\.localhost on 127\.0\.0\.1:(\d+) \(caddy; CA (\S+)\)/.exec(err);
    assert.ok(listen, `fred up found caddy on PATH but printed no ingress: ${err.slice(-2000)}`);
    assert.match(err, /curl --cacert \S+root\.crt/);
    const connect = await runFred(["lease", "connect", lease, ...keys]);
    assert.equal(connect.code, 0, connect.stderr);
    const host = /https:\/\/([a-z0-9-]+\.fred\.localhost)\//.exec(connect.stderr)?.[1];
    assert.ok(host, `connect printed no https name: ${connect.stderr}`);
    const answer = await httpsGet(host, Number(listen[1]), readFileSync(listen[2] as string));
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body.trim(), "hello from fred");
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

  it("the demo exits on SIGTERM: a stop, restart or update does not wait out the grace period", async () => {
    // httpd as PID 1 has no TERM handler, so the kernel dropped the signal and the engine
    // killed it (exit 137) only after the whole grace; the demo's shell traps it (exit 0).
    const docker = (args: string[]) => execFileSync("docker", args, { encoding: "utf8" }).trim();
    const id = docker(["run", "-d", "--network", "none", DEMO_IMAGE]);
    try {
      await until(() => {
        try {
          return docker(["exec", id, "cat", "/data/www/version.txt"]) === "v1";
        } catch {
          return false; // not started yet
        }
      }, "the demo set up");
      docker(["stop", "-t", "60", id]);
      assert.equal(
        docker(["inspect", "-f", "{{.State.ExitCode}}", id]),
        "0",
        "stopped by its trap, not killed",
      );
    } finally {
      docker(["rm", "-f", "-v", id]);
    }
  });

  it("update deploys a second manifest on the same data, releases show both, restart keeps it serving", async () => {
    const id = (await page("id.txt")).trim();
    const updated = await runFred([
      "lease",
      "update",
      lease,
      "--manifest",
      join(home, "demo", "notes-v2.json"),
      ...keys,
    ]);
    assert.equal(updated.code, 0, updated.stderr);
    assert.equal(JSON.parse(updated.stdout).provision_status, "ready");
    assert.equal((await page("version.txt")).trim(), "v2");
    assert.equal((await page("id.txt")).trim(), id, "an update keeps the volume");

    const releases = await runFred(["lease", "releases", lease, ...keys]);
    assert.equal(releases.code, 0, releases.stderr);
    const list = (JSON.parse(releases.stdout) as { releases: { version: number; status: string }[] })
      .releases;
    assert.deepEqual(
      list.map((r) => [r.version, r.status]),
      [
        [1, "superseded"],
        [2, "active"],
      ],
    );

    const boots = (await page("boots.txt")).trim().split("\n").length;
    const restarted = await runFred(["lease", "restart", lease, ...keys]);
    assert.equal(restarted.code, 0, restarted.stderr);
    assert.equal(JSON.parse(restarted.stdout).provision_status, "ready");
    assert.equal(
      (await page("boots.txt")).trim().split("\n").length,
      boots + 1,
      "the restart booted it once more",
    );
    assert.equal((await page("version.txt")).trim(), "v2", "a restart keeps the release");
  });

  it("close removes the containers and keeps the data; restore onto a larger tier brings the same data back", async () => {
    const id = (await page("id.txt")).trim();
    assert.match(id, /^[0-9a-f-]{36}$/);
    const bootsBefore = (await page("boots.txt")).trim().split("\n").length;
    const closed = await runFred(["lease", "close", lease, ...keys]);
    assert.equal(closed.code, 0, closed.stderr);
    assert.equal(JSON.parse(closed.stdout).state, "LEASE_STATE_CLOSED");
    const status = await until(
      async () => {
        const body = JSON.parse((await runFred(["lease", "status", lease, ...keys])).stdout) as Record<
          string,
          unknown
        >;
        return body.provision_status === "retained" ? body : undefined;
      },
      "the closed lease to read retained",
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    assert.equal(status.provision_status, "retained", JSON.stringify(status));
    const left = execFileSync("docker", ["ps", "-aq", "--filter", `label=fred.lease_uuid=${lease}`], {
      encoding: "utf8",
    });
    assert.equal(left.trim(), "", "the closed lease's containers are gone");

    // --from <source-uuid> beside --from <dev account>: a UUID is never an account name.
    const restored = await runFred(["lease", "restore", "--from", lease, "--sku", "docker-medium", ...keys]);
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
      bootsBefore + 1,
      "the boots before close are there, plus the restored one",
    );

    lease = into; // closed for good below
  });

  it("the same journey with every token signed by Keplr's ADR-036 builder, not our code", async () => {
    const dispatcher = new Agent({ connect: { ca: readFileSync(join(home, "tls", "ca.pem"), "utf8") } });
    const devnet = JSON.parse((await runFred(["devnet", "keys", "--home", join(home, "devnet")])).stdout) as {
      accounts: { name: string; mnemonic: string }[];
    };
    const mnemonic = devnet.accounts.find((a) => a.name === "tenant1")?.mnemonic as string;
    let last = 0;
    const stamp = () => {
      last = Math.max(last + 1, Math.floor(Date.now() / 1000) - 20);
      return last;
    };
    const call = async (uuid: string, path: string, init: RequestInit = {}, token?: string) => {
      const headers = new Headers(init.headers);
      // Replay-protected calls (POSTs, connection) need a timestamp never used before;
      // the other reads take the current second (unique ones would run ahead of the clock).
      const spent = init.method === "POST" || path === "connection";
      const at = spent ? stamp() : Math.floor(Date.now() / 1000);
      headers.set("authorization", `Bearer ${token ?? keplrAccessToken(mnemonic, uuid, at)}`);
      const res = await fetchTls(`${api}/v1/leases/${uuid}/${path}`, {
        ...(init as Parameters<typeof fetchTls>[1]),
        headers: Object.fromEntries(headers),
        dispatcher,
      });
      const text = await res.text();
      return { status: res.status, body: (text === "" ? {} : JSON.parse(text)) as Record<string, unknown> };
    };
    const settled = (uuid: string, busy: string) =>
      until(
        async () => {
          const { body } = await call(uuid, "status");
          assert.ok(body.provision_status !== "failed", JSON.stringify(body));
          return body.provision_status === "ready" && body.state === "LEASE_STATE_ACTIVE" ? body : undefined;
        },
        `${uuid} to settle after ${busy}`,
        { timeoutMs: 240_000, intervalMs: 500 },
      );
    const url = async (uuid: string) => {
      const { status, body } = await call(uuid, "connection");
      assert.equal(status, 200, JSON.stringify(body));
      const ports = (body.connection as { ports: Record<string, { host_ip: string; host_port: number }> })
        .ports;
      const p = ports["8080/tcp"] as { host_ip: string; host_port: number };
      return `http://${p.host_ip}:${p.host_port}/`;
    };
    const manifest = join(home, "demo", "notes.json");
    const manifestBytes = readFileSync(manifest);
    const metaHash = createHash("sha256").update(manifestBytes).digest("hex");

    const created = await runFred([
      "lease",
      "create",
      "--sku",
      "docker-small",
      "--manifest",
      manifest,
      ...keys,
    ]);
    assert.equal(created.code, 0, created.stderr);
    const uuid = JSON.parse(created.stdout).lease_uuid as string;
    const uploaded = await call(
      uuid,
      "data",
      { method: "POST", body: manifestBytes },
      keplrPayloadToken(mnemonic, uuid, metaHash, stamp()),
    );
    assert.equal(uploaded.status, 202, JSON.stringify(uploaded.body));
    await settled(uuid, "upload");
    const id = (await (await fetch(`${await url(uuid)}id.txt`)).text()).trim();

    const v2 = readFileSync(join(home, "demo", "notes-v2.json")).toString("base64");
    const json = { "content-type": "application/json" };
    const update = await call(uuid, "update", {
      method: "POST",
      headers: { ...json, "idempotency-key": randomUUID() },
      body: JSON.stringify({ payload: v2 }),
    });
    assert.equal(update.status, 202, JSON.stringify(update.body));
    await settled(uuid, "update");
    assert.equal((await (await fetch(`${await url(uuid)}version.txt`)).text()).trim(), "v2");
    const releases = await call(uuid, "releases");
    assert.equal((releases.body.releases as unknown[]).length, 2);
    const restart = await call(uuid, "restart", {
      method: "POST",
      headers: { "idempotency-key": randomUUID() },
    });
    assert.equal(restart.status, 202, JSON.stringify(restart.body));
    await settled(uuid, "restart");
    // The restarted container has served nothing yet: one request, then its log shows it.
    assert.equal((await (await fetch(`${await url(uuid)}version.txt`)).text()).trim(), "v2");
    const logs = await call(uuid, "logs?tail=50");
    assert.match(Object.values(logs.body.logs as Record<string, string>).join("\n"), /response:200/);

    assert.equal((await runFred(["lease", "close", uuid, ...keys])).code, 0);
    await until(
      async () => (await call(uuid, "status")).body.provision_status === "retained",
      "the closed lease to read retained",
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    const target = await runFred([
      "lease",
      "create",
      "--sku",
      "docker-small",
      "--manifest",
      manifest,
      ...keys,
    ]);
    const into = JSON.parse(target.stdout).lease_uuid as string;
    const restore = await call(into, "restore", {
      method: "POST",
      headers: { ...json, "idempotency-key": randomUUID() },
      body: JSON.stringify({ from_lease_uuid: uuid }),
    });
    assert.equal(restore.status, 202, JSON.stringify(restore.body));
    await settled(into, "restore");
    assert.equal((await (await fetch(`${await url(into)}id.txt`)).text()).trim(), id);
    assert.equal((await runFred(["lease", "close", into, ...keys])).code, 0);
  });

  it("a second start on the same btrfs named by --volume-path (no --docker) resumes the restored lease", async () => {
    await stopUp();
    // The operator's own btrfs: here the loopback one the first start made, still mounted.
    up = await startUp(["--volume-path", volumeData, "--retention-max-age", "3s"]);
    assert.match(unfolded(up.stderr()), new RegExp(`volumes: ${volumeData}; closed leases kept 3s`));
    const status = await runFred(["lease", "status", lease, ...keys]);
    assert.equal(status.code, 0, status.stderr);
    assert.equal(JSON.parse(status.stdout).state, "LEASE_STATE_ACTIVE");
    assert.equal((await page()).trim(), "hello from fred");
  });

  it("closed for good: past the provider's retention age the reaper leaves no container, volume, snapshot or retention", async () => {
    const closed = await runFred(["lease", "close", lease, ...keys]);
    assert.equal(closed.code, 0, closed.stderr);
    assert.equal(JSON.parse(closed.stdout).state, "LEASE_STATE_CLOSED");
    const secret = readFileSync(join(home, "docker-backend", "callback-secret"), "utf8").trim();
    const retained = join(volumeData, ".fred-retained");
    const traces = async () => {
      const docker = (args: string[]) => execFileSync("docker", args, { encoding: "utf8" }).trim();
      const body = JSON.parse((await runFred(["lease", "status", lease, ...keys])).stdout) as Record<
        string,
        unknown
      >;
      const retentions = (
        (await signedClient(backend, secret).get("/retentions")).json as {
          retentions: { lease_uuid: string }[];
        }
      ).retentions;
      return {
        containers: docker(["ps", "-aq", "--filter", `label=fred.lease_uuid=${lease}`]),
        docker_volumes: docker(["volume", "ls", "-q", "--filter", `label=fred.lease_uuid=${lease}`]),
        live_volumes: readdirSync(volumeData).filter((n) => n.includes(lease)),
        snapshots: existsSync(retained) ? readdirSync(retained) : [],
        subvolumes: execFileSync("btrfs", ["subvolume", "list", volumeData], { encoding: "utf8" })
          .split("\n")
          .filter((l) => l.includes(lease) || l.includes(".fred-retained/")),
        retentions: retentions.map((r) => r.lease_uuid),
        retained_status: body.provision_status === "retained",
      };
    };
    const gone = {
      containers: "",
      docker_volumes: "",
      live_volumes: [],
      snapshots: [],
      subvolumes: [],
      retentions: [],
      retained_status: false,
    };
    const last = await until(
      async () => {
        const now = await traces();
        return JSON.stringify(now) === JSON.stringify(gone) ? now : undefined;
      },
      "the reaper to remove every trace of the closed lease",
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    assert.deepEqual(last, gone);
  });

  it("a --volume-path that is not btrfs with quotas is refused, naming the key", async () => {
    const other = mkdtempSync(join(tmpdir(), "fred-up-novol-"));
    try {
      const plain = join(other, "plain");
      mkdirSync(plain);
      const r = await runFred(["up", "--home", other, "--volume-path", plain]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /volume_data_path \S+plain is not on btrfs/);
      const relative = await runFred(["up", "--home", other, "--volume-path", "rel/dir"]);
      assert.equal(relative.code, 1);
      assert.match(relative.stderr, /--volume-path must be an absolute path/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("--reset starts over and removes the old chain's containers", async () => {
    // One more lease of the old chain, running when the reset comes.
    const deployed = await deployDemo();
    lease = String(JSON.parse(deployed.stdout).lease_uuid);
    await stopUp();
    up = await startUp(["--docker", "--reset"]);
    assert.match(up.stderr(), /removed [1-9]\d* demo container/);
    const left = execFileSync("docker", ["ps", "-aq", "--filter", `label=fred.lease_uuid=${lease}`], {
      encoding: "utf8",
    });
    assert.equal(left.trim(), "");
    const status = await runFred(["lease", "status", lease, ...keys]);
    assert.equal(status.code, 1, "the new chain does not know the old lease");
  });

  it("switching between the mock and the Docker backend re-makes an empty placement store, and refuses to orphan leases", async () => {
    await stopUp();
    // The reset chain has no lease yet: plain fred up (mock) adapts.
    const mock = await launchFred<true>(["up", "--home", home], {
      ready: (line, stream) =>
        stream === "stderr" && line.includes("Press Ctrl-C to stop.") ? true : undefined,
      readyTimeoutMs: 180_000,
    });
    assert.match(unfolded(mock.stderr()), /placement store re-made for backend mock/);
    // The banner (every line that is not a JSON log line) fits an 80-column terminal, but for
    // a URL that cannot be broken (the dashboard's carries its 64-character token): the
    // rest of its line fits.
    for (const line of mock
      .stderr()
      .split("\n")
      .filter((l) => !l.startsWith("{")))
      assert.ok(line.replace(/https?:\/\/\S+$/, "").length <= 80, `banner line over 80 columns: ${line}`);
    assert.match(unfolded(mock.stderr()), /dashboard\s+http:\/\/127\.0\.0\.1:\d+\/#token=[0-9a-f]{64}/);
    const rpc = /devnet\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(unfolded(mock.stderr()))?.[1] ?? "";
    const mockKeys = ["--from", "tenant1", "--home", join(home, "devnet"), "--rpc", rpc];
    const manifest = join(home, "switch.json");
    writeFileSync(manifest, JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
    const deployed = await runFred([
      "lease",
      "deploy",
      "--sku",
      "docker-small",
      "--manifest",
      manifest,
      ...mockKeys,
    ]);
    assert.equal(deployed.code, 0, deployed.stderr);
    mock.signal("SIGINT");
    assert.equal((await mock.exited).code, 0);
    // Now the store holds a lease on the mock backend: --docker says what to do instead.
    const refused = await runFred(["up", "--home", home, "--docker"]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /holds 1 lease\(s\) placed on another backend than docker/);
    assert.match(refused.stderr, /fred up --docker --reset/);
  });
});
