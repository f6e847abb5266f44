import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { lstatSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { stringify } from "yaml";
import { isUuidV4 } from "../../../src/core/uuid.ts";
import { dockerSkip } from "../../support/docker.ts";
import { startReceiver } from "../kit/receiver.ts";
import { signedClient } from "../kit/signed-client.ts";
import { DISK_SKU, httpdManifest, prepareDockerBackend, SECRET, spawnDockerBackend } from "./helpers.ts";
import { provisionBody } from "./provision-helper.ts";

/** `fred backend docker` as an operator meets it: first start, refusals, disk withheld. */
const skip = await dockerSkip({ btrfs: true, images: ["httpd"] });
const FRED = new URL("../../../bin/fred.js", import.meta.url).pathname;

function fred(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [FRED, ...args], {
    encoding: "utf8",
    env: { ...process.env, FRED_LOG_LEVEL: "error" },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("fred backend docker (CLI)", { skip }, () => {
  let dir: string;
  const config = (extra: Record<string, unknown>) => {
    const path = join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(
      path,
      stringify({
        listen_addr: "127.0.0.1:0",
        callback_secret: SECRET,
        host_address: "127.0.0.1",
        sku_mapping: { "0190f3a2-7c1e-7000-8000-00000000d001": "tiny" },
        sku_profiles: { tiny: { cpu_cores: 0.1, memory_mb: 32 } },
        ...extra,
      }),
    );
    return path;
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "fred-docker-cli-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("--help shows the first-start and run examples", () => {
    const r = fred(["backend", "docker", "--help"]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /--initialize-storage-identity new/);
    assert.match(r.stdout, /DOCKER_BACKEND_CALLBACK_SECRET/);
  });

  it("first start binds and prints a storage id once; a second initialization is refused", () => {
    const path = config({ db_path: "init.db", volume_filesystem: "none" });
    const first = fred(["backend", "docker", "-c", path, "--initialize-storage-identity", "new"]);
    assert.equal(first.code, 0, first.stderr);
    const { storage_id } = JSON.parse(first.stdout) as { storage_id: string };
    assert.ok(isUuidV4(storage_id));
    const again = fred(["backend", "docker", "-c", path, "--initialize-storage-identity", "new"]);
    assert.equal(again.code, 1);
    assert.equal(again.stdout, "");
    assert.match(again.stderr, /already bound/);
    const bad = fred(["backend", "docker", "-c", path, "--initialize-storage-identity", "old"]);
    assert.equal(bad.code, 1);
  });

  it("refuses to start without an initialized journal", () => {
    const r = fred(["backend", "docker", "-c", config({ db_path: "missing.db", volume_filesystem: "none" })]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /initialize it first/);
  });

  it("refuses to start when volume_data_path is not btrfs with quotas", () => {
    const path = config({ db_path: "ext4.db", volume_data_path: join(dir, "volumes") });
    assert.equal(fred(["backend", "docker", "-c", path, "--initialize-storage-identity", "new"]).code, 0);
    const r = fred(["backend", "docker", "-c", path]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /not on btrfs/);
  });

  it("refuses a config with a reference-only key, naming it", () => {
    const r = fred(["backend", "docker", "-c", config({ releases_db_path: "r.db" })]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /releases_db_path.*db_path/);
  });

  it("listens on a unix: socket (mode 0660), answers /health over it, and removes it on a clean stop", async () => {
    const socketPath = join(dir, "backend.sock");
    const setup = prepareDockerBackend({ volume_filesystem: "none", listen_addr: `unix:${socketPath}` });
    const proc = await spawnDockerBackend(setup.configPath);
    try {
      assert.equal(proc.ready.url, `unix:${socketPath}`);
      assert.equal((lstatSync(socketPath).mode & 0o777).toString(8), "660");
      const status = await new Promise<number | undefined>((resolve, reject) =>
        get({ socketPath, path: "/health" }, (res) => {
          res.resume();
          resolve(res.statusCode);
        }).on("error", reject),
      );
      assert.equal(status, 200);
    } finally {
      await proc.stop();
      await setup.cleanup();
    }
    assert.throws(() => lstatSync(socketPath), /ENOENT/);
  });

  it("with volume_filesystem: none, disk-bearing SKUs are refused and /stats says disk_withheld", async () => {
    const setup = prepareDockerBackend({ volume_filesystem: "none" });
    const proc = await spawnDockerBackend(setup.configPath);
    const rx = await startReceiver(SECRET);
    try {
      const stats = (await (await fetch(`${proc.ready.url}/stats`)).json()) as { disk_withheld: boolean };
      assert.equal(stats.disk_withheld, true);
      const call = provisionBody(rx, httpdManifest("app"), [
        { sku: DISK_SKU, quantity: 1, service_name: "app" },
      ]);
      const res = await signedClient(proc.ready.url, SECRET).post("/provision", call.body);
      assert.equal(res.status, 503, res.text);
      assert.equal((res.json as { code?: string }).code, "insufficient_resources");
    } finally {
      await proc.stop();
      await rx.close();
      await setup.cleanup();
    }
  });
});
