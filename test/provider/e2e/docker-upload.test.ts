import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  type DockerProcess,
  type DockerTestSetup,
  prepareDockerBackend,
  SECRET,
  spawnDockerBackend,
} from "../../backend/docker/helpers.ts";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { dockerCli, dockerSkip } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import { call, TenantKey } from "../api/tenant-client.ts";
import { Stack, sha256 } from "./stack.ts";

/**
 * The tenant journey on the real Docker backend, every piece a real process: a devnet,
 * `fred backend docker` and providerd. A lease created with the meta_hash of a manifest
 * becomes ACTIVE through `POST data` alone, and the tenant reaches its container through
 * what `GET connection` says and reads its output with `GET logs`. Then a crashing image:
 * the lease is rejected, its containers are removed, and providerd still answers
 * `GET provision` and `GET logs` from the failure diagnostics the backend kept.
 * One stack serves both, to keep CI time low.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd", "crashloop"] });

const HTTPD = Buffer.from(JSON.stringify({ image: "fred-test/httpd:1", ports: { "8080/tcp": {} } }));
const CRASH = Buffer.from(JSON.stringify({ image: "fred-test/crashloop:1" }));
const hex = (m: Uint8Array) => Buffer.from(sha256(m)).toString("hex");

const containers = async (lease: string, running = false) =>
  (
    await dockerCli([
      "ps",
      "-aq",
      "--filter",
      `label=fred.lease_uuid=${lease}`,
      ...(running ? ["--filter", "status=running"] : []),
    ])
  ).out
    .split(/\s+/)
    .filter(Boolean);

/** The first `{host_ip, host_port}` binding anywhere in a connection answer. */
function firstBinding(v: unknown): { host_ip: string; host_port: number } | undefined {
  if (v === null || typeof v !== "object") return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.host_port === "number" && typeof o.host_ip === "string")
    return { host_ip: o.host_ip, host_port: o.host_port };
  for (const child of Object.values(o)) {
    const found = firstBinding(child);
    if (found !== undefined) return found;
  }
  return undefined;
}

describe("tenant upload on the real Docker backend (devnet + providerd + fred backend docker)", {
  skip,
}, () => {
  const stack = new Stack();
  let setup: DockerTestSetup | undefined;
  let backend: DockerProcess | undefined;
  let tenant: TenantKey;

  before(async () => {
    await stack.start(
      () => [],
      async (s) => {
        // 1500 ms of startup verification: the crashing image exits inside it, so its
        // provision fails (and the lease is rejected) instead of dying after "ready".
        setup = prepareDockerBackend({
          sku_mapping: { [s.sku("docker-small")]: "tiny" },
          sku_profiles: { tiny: { cpu_cores: 0.1, memory_mb: 32, disk_mb: 0 } },
          startup_verify_duration: "1500ms",
        });
        backend = await spawnDockerBackend(setup.configPath, 120_000);
        s.extraConfig = {
          backends: [{ name: "docker-1", url: backend.ready.url, hmac_secret: SECRET, default: true }],
        };
      },
    );
    tenant = new TenantKey(stack.account("tenant1").private_key_hex);
    await stack.startProviderd();
  });

  after(async () => {
    await stack.close();
    await backend?.stop();
    await setup?.cleanup();
  });

  it("a manifest lease goes PENDING → ACTIVE through POST data alone; connection and logs answer", async () => {
    const [lease] = await stack.createLeases(1, "docker-small", sha256(HTTPD));
    assert.ok(lease !== undefined);
    const before = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
    assert.equal(before.status, 200, before.text);
    assert.equal(before.body.state, "LEASE_STATE_PENDING");
    assert.equal(before.body.requires_payload, true);
    assert.equal(before.body.payload_received, false);

    const upload = await call(stack.api, `/v1/leases/${lease}/data`, tenant.payload(lease, hex(HTTPD)), {
      method: "POST",
      body: HTTPD,
      headers: { "content-type": "application/octet-stream" },
    });
    assert.equal(upload.status, 202, upload.text);
    await stack.waitState([lease], "LEASE_STATE_ACTIVE", 120_000);
    assert.equal((await containers(lease, true)).length, 1, "one running container for the lease");

    const conn = await call(stack.api, `/v1/leases/${lease}/connection`, tenant.fresh(lease));
    assert.equal(conn.status, 200, conn.text);
    const binding = firstBinding(conn.body);
    assert.ok(binding !== undefined, `a port binding in ${conn.text}`);
    const page = await fetch(`http://${binding.host_ip}:${binding.host_port}/`);
    assert.equal(page.status, 200);
    assert.equal(await page.text(), "fred-test-httpd\n");

    // The request above is in the container's log (busybox httpd -v logs each response);
    // the engine hands log lines over asynchronously, so wait for the line to show.
    const logs = await until(
      async () => {
        const a = await call(stack.api, `/v1/leases/${lease}/logs`, tenant.access(lease));
        assert.equal(a.status, 200, a.text);
        const text = Object.values(a.body.logs as Record<string, string>).join("");
        return /response:200/.test(text) ? a.body : undefined;
      },
      "the container's request log in GET logs",
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    assert.equal(Object.keys(logs.logs as object).length, 1);
  });

  it("a crashing image: the lease is rejected, and provision and logs answer after its containers are gone", async () => {
    const [lease] = await stack.createLeases(1, "docker-small", sha256(CRASH));
    assert.ok(lease !== undefined);
    const upload = await call(stack.api, `/v1/leases/${lease}/data`, tenant.payload(lease, hex(CRASH)), {
      method: "POST",
      body: CRASH,
      headers: { "content-type": "application/octet-stream" },
    });
    assert.equal(upload.status, 202, upload.text);
    await stack.waitState([lease], "LEASE_STATE_REJECTED", 120_000);

    // A rejected lease's stopped containers stay on the backend until something removes
    // them (providerd has no orphan pass for ended leases yet): the backend's own
    // deprovision removes them here, so nothing of the workload is left but the
    // diagnostics the backend kept.
    const b = signedClient(backend!.ready.url, SECRET);
    const gone = await b.post("/deprovision", { lease_uuid: lease });
    assert.equal(gone.status, 200, gone.text);
    await until(async () => (await containers(lease)).length === 0, "the lease's containers removed", {
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    await until(
      async () => {
        const r = await b.get(`/provisions/${lease}`);
        return r.status === 200 && !("items" in (r.json as object));
      },
      "the backend to answer from its persisted diagnostics (its lease row gone)",
      { timeoutMs: 60_000, intervalMs: 200 },
    );

    const p = await call(stack.api, `/v1/leases/${lease}/provision`, tenant.access(lease));
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.status, "failed");
    assert.equal(p.body.reason, "ContainerExited");
    assert.ok((p.body.fail_count as number) >= 1);
    assert.match(String(p.body.message), /exited unexpectedly with code 3/);
    assert.doesNotMatch(p.text, /\/var\/|daemon|OCI|runc|sha256:|Error response/i);

    const logs = await call(stack.api, `/v1/leases/${lease}/logs`, tenant.access(lease));
    assert.equal(logs.status, 200, logs.text);
    const text = Object.values(logs.body.logs as Record<string, string>).join("");
    assert.match(text, /crashloop giving up\n/, "the failed container's output was kept");

    const s = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
    assert.equal(s.body.state, "LEASE_STATE_REJECTED");
    assert.equal(s.body.provision_status, "failed");
  });
});
