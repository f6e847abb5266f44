import { randomUUID } from "node:crypto";
import { parseDockerBackendConfig } from "../../../src/backend/docker/config.ts";
import type { InstanceSpec, SkuProfile, WorkloadSpec } from "../../../src/backend/kit/substrate.ts";
import { dockerCli, TEST_DOCKER_HOST } from "../../support/docker.ts";

/**
 * What the in-process substrate suites of the Docker backend share: their config and
 * workload specs, and a check that no volume-seed helper container was left behind. The
 * engine itself is the shared fixture's (test/support/docker.ts).
 */

/** Ids of volume-seed helper containers of this storage id still present (should be none). */
export async function seedHelpersLeft(storageId: string): Promise<string> {
  const ps = await dockerCli([
    "ps",
    "-aq",
    "--filter",
    `label=fred.storage_id=${storageId}`,
    "--filter",
    "label=fred.role=volume-seed",
  ]);
  return ps.out.trim();
}

export const TEST_SKU = "01900000-0000-7000-8000-00000000d0c1";

/**
 * The backend config the in-process substrate suites share: loopback ports, one SKU
 * (0.25 CPU, 64 MB, 16 MB disk), no startup grace; `extra` keys override or add.
 */
export function substrateConfig(volumeDataPath: string | undefined, extra: Record<string, unknown> = {}) {
  return parseDockerBackendConfig({
    host_address: "127.0.0.1",
    host_bind_ip: "127.0.0.1",
    callback_secret: "0123456789abcdef0123456789abcdef",
    sku_mapping: { [TEST_SKU]: "t" },
    sku_profiles: { t: { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 } },
    startup_verify_duration: "0s",
    volume_data_path: volumeDataPath ?? "/nonexistent",
    docker_host: TEST_DOCKER_HOST,
    // The fred-test/* images are built on this host and no registry has them.
    image_pull_policy: "if-not-present",
    ...extra,
  });
}

export function workloadSpec(opts: {
  storageId: string;
  tenant?: string;
  services: Record<string, Record<string, unknown> & { image: string }>;
  profile?: SkuProfile;
  quantity?: Record<string, number>;
}): WorkloadSpec {
  const lease = randomUUID();
  const profile = opts.profile ?? { cpu_cores: 0.25, memory_mb: 64, disk_mb: 0 };
  const instances: InstanceSpec[] = [];
  for (const service of Object.keys(opts.services).sort()) {
    for (let index = 0; index < (opts.quantity?.[service] ?? 1); index++) {
      instances.push({ key: `${lease}-${service}-${index}`, service, index, sku: TEST_SKU, profile });
    }
  }
  return {
    leaseUuid: lease,
    tenant: opts.tenant ?? `manifest1${randomUUID().replaceAll("-", "").slice(0, 20)}`,
    providerUuid: "01900000-0000-7000-8000-0000000000ff",
    operationId: randomUUID(),
    release: 1,
    backendName: "docker-test",
    storageId: opts.storageId,
    items: Object.keys(opts.services).map((s) => ({
      sku: TEST_SKU,
      quantity: opts.quantity?.[s] ?? 1,
      service_name: s,
    })),
    instances,
    payload: undefined,
    manifest: { services: opts.services },
    createdAtMs: Date.now(),
  };
}
