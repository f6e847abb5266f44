import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDockerBackendConfig } from "../../../src/backend/docker/config.ts";
import { buildContainerSpec, numericOwner } from "../../../src/backend/docker/container-spec.ts";
import { instanceName, leaseNetworkName, volumeDirName } from "../../../src/backend/docker/names.ts";
import { serviceModel, serviceModels, startOrder } from "../../../src/backend/docker/service-model.ts";
import { parseTenantManifest } from "../../../src/backend/kit/index.ts";
import type { WorkloadSpec } from "../../../src/backend/kit/substrate.ts";

const LEASE = "01900000-0000-7000-8000-00000000abcd";
const SKU = "01900000-0000-7000-8000-000000000001";
const config = parseDockerBackendConfig({
  host_address: "10.0.0.5",
  host_bind_ip: "127.0.0.1",
  callback_secret: "0123456789abcdef0123456789abcdef",
  sku_mapping: { [SKU]: "small" },
  sku_profiles: { small: { cpu_cores: 0.5, memory_mb: 512, disk_mb: 100 } },
  container_pids_limit: 128,
  container_tmpfs_size_mb: 16,
});

const manifest = {
  services: {
    web: {
      image: "fred-test/httpd:1",
      ports: { "8080/TCP": {}, "53/udp": {} },
      expose: ["9000"],
      env: { GREETING: "hi" },
      command: ["/bin/httpd"],
      args: ["-f", "-p", "8080"],
      labels: { team: "blue" },
      health_check: { test: ["CMD", "true"], interval: "1s", retries: 3, timeout: 2_000_000_000 },
      tmpfs: ["/cache"],
      user: "1000:1001",
      stop_grace_period: "2500ms",
      init: true,
      depends_on: { db: { condition: "service_healthy" } },
    },
    db: { image: "fred-test/volume:1" },
  },
};

const spec: WorkloadSpec = {
  leaseUuid: LEASE,
  tenant: "manifest1tenant",
  providerUuid: "01900000-0000-7000-8000-0000000000ff",
  operationId: "6f1c1f3e-4d0a-4b7e-9a53-0f2d1c3b4a59",
  release: 1,
  backendName: "docker",
  storageId: "2b0f1f3e-4d0a-4b7e-9a53-0f2d1c3b4a59",
  items: [{ sku: SKU, quantity: 1, service_name: "web" }],
  instances: [
    {
      key: `${LEASE}-web-0`,
      service: "web",
      index: 0,
      sku: SKU,
      profile: { cpu_cores: 0.5, memory_mb: 512, disk_mb: 100 },
    },
  ],
  payload: undefined,
  manifest,
  createdAtMs: Date.UTC(2026, 0, 1),
};

describe("manifest service → hardened container spec", () => {
  const model = serviceModel("web", manifest.services.web);
  const opts = buildContainerSpec({
    spec,
    instance: spec.instances[0]!,
    model,
    config,
    network: leaseNetworkName(spec.leaseUuid),
    mounts: { durable: new Map([["/data", "/vol/fred-x/data-1"]]), ephemeral: ["/var/cache/app"] },
  });
  const host = opts.HostConfig!;

  it("names the container fred-<lease>-<service>-<i> and labels it for recovery and stale-handle checks", () => {
    assert.equal(opts.name, `fred-${LEASE}-web-0`);
    assert.equal(opts.name, instanceName(LEASE, "web", 0));
    const labels = opts.Labels!;
    assert.equal(labels["fred.lease_uuid"], LEASE);
    assert.equal(labels["fred.managed"], "true");
    assert.equal(labels["fred.storage_id"], spec.storageId);
    assert.equal(labels["fred.operation_id"], spec.operationId);
    assert.equal(labels["fred.release"], "1");
    assert.equal(labels["fred.service_name"], "web");
    assert.equal(labels["fred.instance_index"], "0");
    assert.equal(labels["fred.sku"], SKU);
    assert.equal(labels["fred.health_gated"], "true");
    assert.equal(labels["fred.instance_count"], "1");
    assert.equal(labels["fred.created_at"], "2026-01-01T00:00:00.000Z");
    assert.equal(labels.team, "blue");
  });

  it("applies the SKU limits: NanoCPUs, memory with swap equal to memory, pids", () => {
    assert.equal(host.NanoCpus, 500_000_000);
    assert.equal(host.Memory, 512 * 1024 * 1024);
    assert.equal(host.MemorySwap, host.Memory);
    assert.equal(host.PidsLimit, 128);
  });

  it("hardens every container", () => {
    assert.deepEqual(host.CapDrop, ["ALL"]);
    assert.deepEqual(host.SecurityOpt, ["no-new-privileges:true"]);
    assert.equal(host.ReadonlyRootfs, true);
    assert.deepEqual(host.RestartPolicy, { Name: "no" });
    assert.equal(host.Tmpfs?.["/tmp"], "rw,nosuid,nodev,size=16m");
    assert.equal(host.Tmpfs?.["/run"], "rw,nosuid,nodev,size=16m");
    assert.equal(host.Tmpfs?.["/cache"], "rw,nosuid,nodev,size=16m");
    assert.equal(
      host.Tmpfs?.["/var/cache/app"],
      "rw,nosuid,nodev,size=16m",
      "ephemeral VOLUME becomes tmpfs",
    );
    assert.equal(host.Privileged, undefined);
  });

  it("publishes ports on host_bind_ip with engine-chosen host ports; expose stays unpublished", () => {
    assert.deepEqual(host.PortBindings, {
      "8080/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }],
      "53/udp": [{ HostIp: "127.0.0.1", HostPort: "" }],
    });
    assert.deepEqual(Object.keys(opts.ExposedPorts!).sort(), ["53/udp", "8080/tcp", "9000/tcp"]);
  });

  it("joins the lease's network under the service alias and mounts durable volumes", () => {
    assert.equal(host.NetworkMode, `fred-lease-${LEASE}`);
    assert.deepEqual(opts.NetworkingConfig?.EndpointsConfig?.[host.NetworkMode!]?.Aliases, ["web"]);
    assert.deepEqual(host.Mounts, [{ Type: "bind", Source: "/vol/fred-x/data-1", Target: "/data" }]);
  });

  it("maps command → entrypoint, args → cmd, env, user, init, stop grace and health check", () => {
    assert.deepEqual(opts.Entrypoint, ["/bin/httpd"]);
    assert.deepEqual(opts.Cmd, ["-f", "-p", "8080"]);
    assert.deepEqual(opts.Env, ["GREETING=hi"]);
    assert.equal(opts.User, "1000:1001");
    assert.equal(host.Init, true);
    assert.equal(opts.StopTimeout, 3);
    assert.deepEqual(opts.Healthcheck, { Test: ["CMD", "true"], Interval: 1e9, Timeout: 2e9, Retries: 3 });
  });

  it("leaves /tmp and /run alone when the root filesystem is writable", () => {
    const writable = { ...config, containerReadonlyRootfs: false };
    const o = buildContainerSpec({
      spec,
      instance: spec.instances[0]!,
      model: serviceModel("db", manifest.services.db),
      config: writable,
      network: "n",
      mounts: { durable: new Map(), ephemeral: [] },
    });
    assert.equal(o.HostConfig?.ReadonlyRootfs, false);
    assert.deepEqual(o.HostConfig?.Tmpfs, {});
    assert.equal(o.Labels?.["fred.health_gated"], "false");
    assert.equal(o.Entrypoint, undefined);
    assert.equal(o.HostConfig?.Init, undefined);
  });
});

describe("service model helpers", () => {
  it("reads what the real manifest parser emits (durations as nanoseconds, ports normalised)", () => {
    const parsed = parseTenantManifest(
      Buffer.from(
        JSON.stringify({
          services: {
            web: {
              image: "fred-test/httpd:1",
              ports: { "8080/TCP": {} },
              expose: ["9000"],
              health_check: {
                test: ["CMD", "true"],
                interval: "1s",
                timeout: "500ms",
                start_period: "2s",
                retries: 2,
              },
              stop_grace_period: "1m30s",
              user: "1000",
              init: false,
              tmpfs: ["/cache"],
            },
          },
        }),
      ),
    );
    const [web] = serviceModels(parsed);
    assert.equal(web?.name, "web");
    assert.deepEqual(web?.ports, ["8080/tcp"]);
    assert.deepEqual(web?.expose, ["9000/tcp"]);
    assert.deepEqual(web?.healthCheck, {
      test: ["CMD", "true"],
      intervalNs: 1e9,
      timeoutNs: 5e8,
      startPeriodNs: 2e9,
      retries: 2,
    });
    assert.equal(web?.stopGracePeriodNs, 90e9);
    assert.equal(web?.user, "1000");
    assert.equal(web?.init, false);
    assert.deepEqual(web?.tmpfs, ["/cache"]);
    const flat = serviceModels(
      parseTenantManifest(Buffer.from(JSON.stringify({ image: "fred-test/httpd:1" }))),
    );
    assert.deepEqual(
      flat.map((m) => m.name),
      ["app"],
      "a flat manifest is service app",
    );
  });

  it("orders services after their dependencies", () => {
    const order = startOrder(serviceModels(manifest as never)).map((m) => m.name);
    assert.deepEqual(order, ["db", "web"]);
    const chain = serviceModels({
      services: {
        a: { image: "x", depends_on: { b: { condition: "service_started" } } },
        b: { image: "x", depends_on: { c: { condition: "service_started" } } },
        c: { image: "x" },
      },
    });
    assert.deepEqual(
      startOrder(chain).map((m) => m.name),
      ["c", "b", "a"],
    );
  });

  it("reads numeric owners only", () => {
    assert.deepEqual(numericOwner("1000"), { uid: 1000, gid: 1000 });
    assert.deepEqual(numericOwner("1000:5"), { uid: 1000, gid: 5 });
    assert.equal(numericOwner("app"), undefined);
    assert.equal(numericOwner(undefined), undefined);
  });

  it("gives each VOLUME path a distinct directory name", () => {
    assert.notEqual(volumeDirName("/a/b"), volumeDirName("/a_b"));
    assert.match(volumeDirName("/var/lib/data"), /^var_lib_data-[0-9a-f]{8}$/);
  });
});
