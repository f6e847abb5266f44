import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  loadDockerBackendConfig,
  parseDockerBackendConfig,
  parseListenAddr,
  redactedConfig,
} from "../../../src/backend/docker/config.ts";
import { isFredError } from "../../../src/core/errors.ts";

const SKU = "01900000-0000-7000-8000-000000000001";
const SECRET = "0123456789abcdef0123456789abcdef";

function minimal(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    host_address: "10.0.0.5",
    callback_secret: SECRET,
    sku_mapping: { [SKU]: "small" },
    sku_profiles: { small: { cpu_cores: 0.5, memory_mb: 512 } },
    ...extra,
  };
}

function refusal(doc: unknown, env: NodeJS.ProcessEnv = {}): string {
  try {
    parseDockerBackendConfig(doc, { env, baseDir: "/etc/fred" });
  } catch (err) {
    assert.ok(isFredError(err, "ERR_CONFIG"), String(err));
    return err.message;
  }
  assert.fail("config was accepted");
}

describe("docker backend config", () => {
  it("fills the reference defaults and freezes the result", () => {
    const c = parseDockerBackendConfig(minimal(), { baseDir: "/etc/fred" });
    assert.equal(c.name, "docker");
    assert.deepEqual(c.listen, { host: "", port: 9001 });
    assert.equal(c.dockerHost, "unix:///var/run/docker.sock");
    assert.equal(c.hostBindIp, "0.0.0.0");
    assert.deepEqual([c.totalCpuCores, c.totalMemoryMb, c.totalDiskMb], [8, 16384, 102400]);
    assert.deepEqual(c.allowedRegistries, ["docker.io", "ghcr.io"]);
    assert.equal(c.containerPidsLimit, 256);
    assert.equal(c.containerTmpfsSizeMb, 64);
    assert.equal(c.containerReadonlyRootfs, true);
    assert.equal(c.provisionTimeoutMs, 600_000);
    assert.equal(c.imagePullTimeoutMs, 300_000);
    assert.equal(c.containerCreateTimeoutMs, 30_000);
    assert.equal(c.startupVerifyDurationMs, 5_000);
    assert.equal(c.reconcileIntervalMs, 300_000);
    assert.equal(c.reservationTtlMs, 600_000);
    assert.equal(c.maxRequestBodySize, 2 * 1024 * 1024);
    assert.equal(c.volumeFilesystem, "btrfs");
    assert.equal(c.dbPath, "/etc/fred/docker-backend.db");
    assert.deepEqual(c.skuProfiles.small, { cpuCores: 0.5, memoryMb: 512, diskMb: 0 });
    assert.ok(Object.isFrozen(c));
    assert.ok(Object.isFrozen(c.skuProfiles));
    assert.equal(redactedConfig(c).callbackSecret, "[redacted]");
  });

  it("parses Go durations, and 0s verification means no wait", () => {
    const c = parseDockerBackendConfig(
      minimal({ startup_verify_duration: "0s", provision_timeout: "1m30s", image_pull_timeout: "500ms" }),
    );
    assert.equal(c.startupVerifyDurationMs, 0);
    assert.equal(c.provisionTimeoutMs, 90_000);
    assert.equal(c.imagePullTimeoutMs, 500);
    assert.match(refusal(minimal({ provision_timeout: "0s" })), /provision_timeout/);
    assert.match(refusal(minimal({ reconcile_interval: "5d" })), /reconcile_interval/);
  });

  it("diagnostics_max_age defaults to 168h, takes a Go duration (0 = never expire) and refuses junk by name", () => {
    assert.equal(parseDockerBackendConfig(minimal()).diagnosticsMaxAgeMs, 168 * 3_600_000);
    assert.equal(
      parseDockerBackendConfig(minimal({ diagnostics_max_age: "90m" })).diagnosticsMaxAgeMs,
      5_400_000,
    );
    assert.equal(parseDockerBackendConfig(minimal({ diagnostics_max_age: "0s" })).diagnosticsMaxAgeMs, 0);
    assert.equal(parseDockerBackendConfig(minimal({ diagnostics_max_age: "0" })).diagnosticsMaxAgeMs, 0);
    assert.match(
      refusal(minimal({ diagnostics_max_age: "a week" })),
      /diagnostics_max_age: "a week" is not a Go duration/,
    );
    assert.match(refusal(minimal({ diagnostics_max_age: 3600 })), /diagnostics_max_age/);
  });

  it("usage_sample_interval defaults to 10s, takes a Go duration and refuses one under 5s by name", () => {
    assert.equal(parseDockerBackendConfig(minimal()).usageSampleIntervalMs, 10_000);
    assert.equal(
      parseDockerBackendConfig(minimal({ usage_sample_interval: "30s" })).usageSampleIntervalMs,
      30_000,
    );
    assert.match(
      refusal(minimal({ usage_sample_interval: "1s" })),
      /usage_sample_interval must be at least 5s/,
    );
    assert.match(refusal(minimal({ usage_sample_interval: "often" })), /usage_sample_interval/);
  });

  it("releases_max_age defaults to 2160h, takes a Go duration (0 = never expire) and refuses junk by name", () => {
    assert.equal(parseDockerBackendConfig(minimal()).releasesMaxAgeMs, 2160 * 3_600_000);
    assert.equal(
      parseDockerBackendConfig(minimal({ releases_max_age: "48h" })).releasesMaxAgeMs,
      172_800_000,
    );
    assert.equal(parseDockerBackendConfig(minimal({ releases_max_age: "0s" })).releasesMaxAgeMs, 0);
    assert.match(
      refusal(minimal({ releases_max_age: "a year" })),
      /releases_max_age: "a year" is not a Go duration/,
    );
  });

  it("applies the environment overrides over the file", () => {
    const c = parseDockerBackendConfig(minimal({ listen_addr: "127.0.0.1:1" }), {
      env: {
        DOCKER_BACKEND_ADDR: "127.0.0.1:9555",
        DOCKER_BACKEND_CALLBACK_SECRET: "z".repeat(40),
        DOCKER_BACKEND_PREVIOUS_CALLBACK_SECRET: "p".repeat(32),
        DOCKER_BACKEND_HOST_ADDRESS: "203.0.113.9",
        DOCKER_HOST: "tcp://127.0.0.1:2375",
        DOCKER_BACKEND_MAX_REQUEST_BODY_SIZE: "4096",
      },
    });
    assert.deepEqual(c.listen, { host: "127.0.0.1", port: 9555 });
    assert.equal(c.callbackSecret, "z".repeat(40));
    assert.equal(c.previousCallbackSecret, "p".repeat(32));
    assert.equal(redactedConfig(c).previousCallbackSecret, "[redacted]");
    assert.equal(c.hostAddress, "203.0.113.9");
    assert.equal(c.dockerHost, "tcp://127.0.0.1:2375");
    assert.equal(c.maxRequestBodySize, 4096);
  });

  it("refuses the reference's separate database keys, pointing at db_path", () => {
    for (const key of ["callback_db_path", "releases_db_path", "diagnostics_db_path", "retention_db_path"]) {
      assert.match(refusal(minimal({ [key]: "x.db" })), new RegExp(`${key}.*db_path`));
    }
  });

  it("refuses keys of later issues with the reason", () => {
    assert.match(refusal(minimal({ ingress: { enabled: true } })), /ingress/);
    assert.match(refusal(minimal({ migration_ready_timeout: "90s" })), /migration/);
  });

  it("takes the retention keys top-level with the reference's defaults", () => {
    const d = parseDockerBackendConfig(minimal(), { baseDir: "/etc/fred" }).retention;
    assert.equal(d.retainOnClose, false);
    assert.equal(d.maxAgeMs, 2160 * 3_600_000);
    assert.equal(d.reapIntervalMs, 3_600_000);
    assert.equal(d.orphanConfirmations, 3);
    assert.equal(d.maxRetainedLeasesPerTenant, 0);
    assert.equal(d.maxRetainedDiskMb, 0);
    assert.equal(d.maxRetainedDiskMbPerTenant, 0);
    assert.deepEqual(d.partitionSource, { kind: "none" });
    assert.deepEqual(d.tenantBudgets, {});
    const c = parseDockerBackendConfig(
      minimal({
        retain_on_close: true,
        retention_max_age: "0s",
        retention_reap_interval: "10m",
        retention_orphan_confirmations: 5,
        max_retained_leases_per_tenant: 4,
        max_retained_disk_mb: 1000,
        max_retained_disk_mb_per_tenant: 300,
        retention_partition_source: "manifest.label:customer",
        retention_tenant_budgets: { manifest1agg: { max_partitions: 2, per_partition_max_leases: 1 } },
      }),
      { baseDir: "/etc/fred" },
    ).retention;
    assert.equal(c.retainOnClose, true);
    assert.equal(c.maxAgeMs, 0, "0 = never expire");
    assert.equal(c.reapIntervalMs, 600_000);
    assert.equal(c.orphanConfirmations, 5);
    assert.equal(c.maxRetainedLeasesPerTenant, 4);
    assert.equal(c.maxRetainedDiskMb, 1000);
    assert.equal(c.maxRetainedDiskMbPerTenant, 300);
    assert.deepEqual(c.partitionSource, { kind: "label", key: "customer" });
    assert.deepEqual(c.tenantBudgets.manifest1agg, {
      maxRetainedLeases: 0,
      maxRetainedDiskMb: 0,
      maxPartitions: 2,
      perPartitionMaxLeases: 1,
      perPartitionMaxDiskMb: 0,
    });
  });

  it("refuses retention settings that cannot take effect, naming the key", () => {
    assert.match(
      refusal(minimal({ retain_on_close: true, volume_filesystem: "none" })),
      /retain_on_close needs volume_filesystem: btrfs/,
    );
    assert.match(refusal(minimal({ retention_partition_source: "chain:x" })), /retention_partition_source/);
    assert.match(refusal(minimal({ retention_partition_source: "manifest.label:fred.x" })), /reserved/);
    assert.match(refusal(minimal({ retention_orphan_confirmations: 0 })), /retention_orphan_confirmations/);
    assert.match(refusal(minimal({ retention_reap_interval: "0s" })), /retention_reap_interval/);
    assert.match(refusal(minimal({ max_retained_disk_mb: -1 })), /max_retained_disk_mb/);
    assert.match(
      refusal(minimal({ retention_tenant_budgets: { t: { max_leases: 1 } } })),
      /retention_tenant_budgets/,
    );
  });

  it("refuses unknown keys, bad values and broken cross references", () => {
    assert.match(refusal(minimal({ colour: "blue" })), /colour|Unrecognized/i);
    assert.match(refusal(minimal({ callback_secret: "short" })), /32 bytes/);
    assert.match(refusal({ ...minimal(), host_address: undefined }), /host_address/);
    assert.match(refusal(minimal({ sku_mapping: { SMALL: "small" } })), /lowercase UUID/);
    assert.match(refusal(minimal({ sku_mapping: { [SKU]: "large" } })), /unknown profile/);
    assert.match(
      refusal(
        minimal({
          sku_profiles: { small: { cpu_cores: 1, memory_mb: 64 }, big: { cpu_cores: 2, memory_mb: 64 } },
        }),
      ),
      /big is not referenced/,
    );
    assert.match(refusal(minimal({ volume_filesystem: "xfs" })), /volume_filesystem/);
    assert.match(refusal(minimal({ host_bind_ip: "localhost" })), /host_bind_ip/);
    assert.match(refusal(minimal({ listen_addr: "9001" })), /listen_addr/);
    assert.match(refusal(minimal({ tls_cert_file: "/c.pem" })), /together/);
    assert.match(
      refusal(minimal({ tenant_quota: { max_cpu_cores: 1, max_memory_mb: 0, max_disk_mb: 1 } })),
      /max_memory_mb/,
    );
    assert.match(refusal([1, 2]), /mapping/);
  });

  it("production mode demands TLS and enforced disk sizes", () => {
    assert.match(refusal(minimal({ production_mode: true })), /tls_cert_file/);
    assert.match(
      refusal(
        minimal({ production_mode: true, tls_cert_file: "c", tls_key_file: "k", volume_filesystem: "none" }),
      ),
      /btrfs/,
    );
    const c = parseDockerBackendConfig(
      minimal({ production_mode: true, tls_cert_file: "c.pem", tls_key_file: "k.pem" }),
      { baseDir: "/etc/fred" },
    );
    assert.deepEqual(c.tls, { certFile: "/etc/fred/c.pem", keyFile: "/etc/fred/k.pem" });
  });

  it("egress: enforced by default, entries canonical and frozen, every bad entry refused by its key", () => {
    const plain = parseDockerBackendConfig(minimal(), { baseDir: "/etc/fred" });
    assert.deepEqual(plain.egress, {
      enforce: true,
      sweepIntervalMs: 30_000,
      policy: { allow: [], deny: [] },
    });
    const c = parseDockerBackendConfig(
      minimal({
        egress: {
          sweep_interval: "5s",
          allow: [
            { cidr: "10.0.0.2", port: 53 },
            { cidr: "FD00::/8", protocol: "tcp" },
          ],
          deny: [{ cidr: "203.0.113.0/24", port: 25, protocol: "tcp" }],
        },
      }),
      { baseDir: "/etc/fred" },
    );
    assert.equal(c.egress.sweepIntervalMs, 5_000);
    assert.deepEqual(c.egress.policy.allow, [
      { cidr: "10.0.0.2/32", family: "ipv4", port: 53 },
      { cidr: "fd00::/8", family: "ipv6", protocol: "tcp" },
    ]);
    assert.deepEqual(c.egress.policy.deny, [
      { cidr: "203.0.113.0/24", family: "ipv4", port: 25, protocol: "tcp" },
    ]);
    assert.ok(Object.isFrozen(c.egress.policy.allow) && Object.isFrozen(c.egress.policy.allow[0]));
    const bad: [unknown, RegExp][] = [
      [
        { allow: [{ cidr: "10.0.0.0/33" }] },
        /egress\.allow\.0\.cidr: "10\.0\.0\.0\/33" has a prefix length outside 0–32/,
      ],
      [{ allow: [{ cidr: "10.1.2.3/8" }] }, /egress\.allow\.0\.cidr: .*bits set after its \/8 prefix/],
      [{ deny: [{ cidr: "a.example.com" }] }, /egress\.deny\.0\.cidr: .*not an IPv4 or IPv6/],
      [{ deny: [{ cidr: "10.0.0.0/8/1" }] }, /egress\.deny\.0\.cidr/],
      [{ deny: [{ cidr: "fe80::1/10" }] }, /egress\.deny\.0\.cidr: .*bits set/],
      [{ allow: [{ cidr: "10.0.0.1", port: 0 }] }, /egress\.allow\.0\.port/],
      [{ allow: [{ cidr: "10.0.0.1", port: 70000 }] }, /egress\.allow\.0\.port/],
      [{ allow: [{ cidr: "10.0.0.1", protocol: "icmp" }] }, /egress\.allow\.0\.protocol/],
      [{ allow: [{ cidr: "10.0.0.1", ports: [1] }] }, /egress\.allow\.0/],
      [{ allow: ["10.0.0.1"] }, /egress\.allow\.0/],
      [{ sweep_interval: "0s" }, /egress\.sweep_interval/],
      [{ firewall: "iptables" }, /egress/],
    ];
    for (const [egress, message] of bad)
      assert.match(refusal(minimal({ egress })), message, JSON.stringify(egress));
  });

  it("egress: enforce false is for development only", () => {
    const dev = parseDockerBackendConfig(minimal({ egress: { enforce: false } }), { baseDir: "/etc/fred" });
    assert.equal(dev.egress.enforce, false);
    assert.match(
      refusal(
        minimal({
          production_mode: true,
          tls_cert_file: "c",
          tls_key_file: "k",
          egress: { enforce: false },
        }),
      ),
      /egress\.enforce: false is refused in production_mode/,
    );
  });

  it("accepts mutual TLS keys with HTTPS, and refuses them without it or with a bad CA file", () => {
    const dir = mkdtempSync(join(tmpdir(), "fred-docker-mtls-"));
    try {
      execFileSync(
        "openssl",
        ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"].concat([
          "-keyout",
          join(dir, "ca.key"),
          "-out",
          join(dir, "ca.pem"),
          "-subj",
          "/CN=ca",
          "-days",
          "1",
        ]),
        { stdio: "ignore" },
      );
      const https = { tls_cert_file: "c.pem", tls_key_file: "k.pem" };
      const parse = (extra: Record<string, unknown>) =>
        parseDockerBackendConfig(minimal({ ...https, ...extra }), { baseDir: dir });
      const c = parse({
        tls_client_ca_file: "ca.pem",
        tls_client_allowed_names: ["providerd", "ops console"],
      });
      assert.deepEqual(c.tls, {
        certFile: join(dir, "c.pem"),
        keyFile: join(dir, "k.pem"),
        clientCaFile: join(dir, "ca.pem"),
        clientAllowedNames: ["providerd", "ops console"],
      });
      assert.ok(Object.isFrozen(c.tls?.clientAllowedNames));
      assert.equal(parse({ tls_client_ca_file: join(dir, "ca.pem") }).tls?.clientAllowedNames, undefined);

      const refusedIn = (extra: Record<string, unknown>, withHttps = true): string => {
        try {
          parseDockerBackendConfig(minimal({ ...(withHttps ? https : {}), ...extra }), { baseDir: dir });
        } catch (err) {
          assert.ok(isFredError(err, "ERR_CONFIG"), String(err));
          return err.message;
        }
        assert.fail("config was accepted");
      };
      assert.match(
        refusedIn({ tls_client_allowed_names: ["providerd"] }),
        /tls_client_allowed_names needs tls_client_ca_file/,
      );
      assert.match(
        refusedIn({ tls_client_ca_file: "ca.pem" }, false),
        /tls_client_ca_file needs tls_cert_file and tls_key_file/,
      );
      assert.match(
        refusedIn({ tls_client_ca_file: "ca.pem", tls_client_allowed_names: ["x"] }, false),
        /tls_client_ca_file needs tls_cert_file/,
      );
      assert.match(
        refusedIn({ tls_client_ca_file: "missing.pem" }),
        new RegExp(`tls_client_ca_file ${join(dir, "missing.pem")} cannot be read: ENOENT`),
      );
      assert.match(refusedIn({ tls_client_ca_file: "." }), /tls_client_ca_file .* cannot be read: EISDIR/);
      assert.match(refusedIn({ tls_client_ca_file: "ca.key" }), /holds no PEM certificate/);
      writeFileSync(
        join(dir, "broken.pem"),
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
      );
      assert.match(refusedIn({ tls_client_ca_file: "broken.pem" }), /certificate 1 is not a valid X.509/);
      assert.match(
        refusedIn({ tls_client_ca_file: "ca.pem", tls_client_allowed_names: [] }),
        /list at least one name/,
      );
      assert.match(
        refusedIn({ tls_client_ca_file: "ca.pem", tls_client_allowed_names: ["ok", ""] }),
        /tls_client_allowed_names.*non-empty/,
      );
      assert.match(
        refusedIn({ tls_client_ca_file: "ca.pem", tls_client_allowed_names: [" padded"] }),
        /without outer spaces/,
      );
      assert.match(
        refusedIn({ tls_client_ca_file: "ca.pem", tls_client_allowed_names: "providerd" }),
        /tls_client_allowed_names/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("splits listen addresses", () => {
    assert.deepEqual(parseListenAddr(":9001"), { host: "", port: 9001 });
    assert.deepEqual(parseListenAddr("[::1]:0"), { host: "::1", port: 0 });
    assert.throws(() => parseListenAddr("host:70000"));
  });

  it("listens on a unix socket: unix:/absolute/path, with no TLS, admitted in production mode", () => {
    const c = parseDockerBackendConfig(minimal({ listen_addr: "unix:/run/fred/docker-backend.sock" }));
    assert.deepEqual(c.listen, { socketPath: "/run/fred/docker-backend.sock" });
    const env = parseDockerBackendConfig(minimal(), { env: { DOCKER_BACKEND_ADDR: "unix:/run/b.sock" } });
    assert.deepEqual(env.listen, { socketPath: "/run/b.sock" });
    const production = parseDockerBackendConfig(
      minimal({ listen_addr: "unix:/run/fred/b.sock", production_mode: true }),
    );
    assert.equal(production.tls, undefined);
    for (const [addr, problem] of [
      ["unix:run/b.sock", /listen_addr "unix:run\/b.sock" must name an absolute socket path/],
      ["unix:///run/b.sock", /not a unix:\/\/ URL/],
      ["unix:/run/../b.sock", /must be normalized/],
      [`unix:/${"s".repeat(120)}`, /at most 107 bytes/],
    ] as const)
      assert.match(refusal(minimal({ listen_addr: addr })), problem);
    assert.match(
      refusal(minimal({ listen_addr: "unix:/run/b.sock", tls_cert_file: "c.pem", tls_key_file: "k.pem" })),
      /tls_cert_file and tls_key_file cannot be used with a unix: listen address/,
    );
  });

  it("loads the documented example file as is", () => {
    const c = loadDockerBackendConfig(join(import.meta.dirname, "../../../examples/docker-backend.yaml"), {});
    assert.equal(c.productionMode, false);
    assert.equal(c.tls, undefined);
    assert.equal(c.tenantQuota, undefined);
    assert.equal(c.volumeFilesystem, "btrfs");
    assert.equal(Object.keys(c.skuMapping).length, 3);
  });

  it("reports unreadable files and YAML errors with the path", () => {
    const dir = mkdtempSync(join(tmpdir(), "fred-docker-config-"));
    try {
      assert.throws(() => loadDockerBackendConfig(join(dir, "missing.yaml"), {}), /cannot read/);
      writeFileSync(join(dir, "dup.yaml"), "name: a\nname: b\n");
      assert.throws(() => loadDockerBackendConfig(join(dir, "dup.yaml"), {}), /not valid YAML/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
