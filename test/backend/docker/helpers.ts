import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { loadDockerBackendConfig } from "../../../src/backend/docker/config.ts";
import { egressTableName } from "../../../src/backend/docker/egress-rules.ts";
import {
  initializeDockerBackendStorage,
  type RunningDockerBackend,
  startDockerBackend,
} from "../../../src/backend/docker/main.ts";
import { createLogger } from "../../../src/log.ts";
import { BTRFS_ROOT, dockerCli, TEST_DOCKER_HOST } from "../../support/docker.ts";
import { type Launched, launchFred } from "../../support/index.ts";
import type { BackendReady } from "../mock/process.ts";

/**
 * A Docker backend under test: its config file in a temp dir (journal beside it, volumes
 * under the test btrfs), started in-process or as a real `fred backend docker` process,
 * and a cleanup that removes every container, network and volume of its storage id.
 */

export const SECRET = "docker-backend-test-secret-0123456789abcdef";
export const PREVIOUS_SECRET = "docker-backend-previous-secret-0123456789ab";
export const SKU = "0190f3a2-7c1e-7000-8000-00000000d001";
export const DISK_SKU = "0190f3a2-7c1e-7000-8000-00000000d002";

export function manifest(services: Record<string, Record<string, unknown>>): Uint8Array {
  return Buffer.from(JSON.stringify({ services }));
}

export function httpdManifest(service = "app"): Uint8Array {
  return manifest({ [service]: { image: "fred-test/httpd:1", ports: { "8080/tcp": {} } } });
}

export interface DockerTestSetup {
  dir: string;
  configPath: string;
  volumeRoot: string;
  storageId: string;
  /** Removes containers, networks and volumes of this storage id, then the temp dir. */
  cleanup(): Promise<void>;
}

/** Writes a config (small SKUs, 0s verification unless overridden) and initializes its journal. */
export function prepareDockerBackend(overrides: Record<string, unknown> = {}): DockerTestSetup {
  const dir = mkdtempSync(join(tmpdir(), "fred-docker-test-"));
  const tag = randomUUID().slice(0, 8);
  const volumeRoot = join(BTRFS_ROOT, `b-${tag}`);
  const doc = {
    name: "docker-test",
    listen_addr: "127.0.0.1:0",
    callback_secret: SECRET,
    previous_callback_secret: PREVIOUS_SECRET,
    host_address: "127.0.0.1",
    host_bind_ip: "127.0.0.1",
    db_path: "journal.db",
    total_cpu_cores: 4,
    total_memory_mb: 4096,
    total_disk_mb: 1024,
    sku_mapping: { [SKU]: "tiny", [DISK_SKU]: "tiny-disk" },
    sku_profiles: {
      tiny: { cpu_cores: 0.1, memory_mb: 32, disk_mb: 0 },
      "tiny-disk": { cpu_cores: 0.1, memory_mb: 32, disk_mb: 16 },
    },
    volume_data_path: volumeRoot,
    docker_host: TEST_DOCKER_HOST,
    startup_verify_duration: "0s",
    reconcile_interval: "5m",
    // Off unless a test asks: the shared fred-test/* images must never be collected.
    image_gc_after: "0s",
    // The fred-test/* images are built on this host and no registry has them.
    image_pull_policy: "if-not-present",
    ...overrides,
  };
  const configPath = join(dir, "docker-backend.yaml");
  writeFileSync(configPath, stringify(doc));
  const storageId = initializeDockerBackendStorage(loadDockerBackendConfig(configPath, {}));
  return {
    dir,
    configPath,
    volumeRoot,
    storageId,
    async cleanup() {
      await removeEverythingOf(storageId);
      await deleteSubvolumes(volumeRoot);
      rmSync(volumeRoot, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Test cleanup: force-removes every container and network labelled with the storage id, and
 * the deployment's egress table (the backend leaves it in the kernel when it stops).
 */
export async function removeEverythingOf(storageId: string): Promise<void> {
  const label = `label=fred.storage_id=${storageId}`;
  const ids = (await dockerCli(["ps", "-aq", "--filter", label])).out.split(/\s+/).filter(Boolean);
  if (ids.length > 0) await dockerCli(["rm", "-f", ...ids]);
  const nets = (await dockerCli(["network", "ls", "-q", "--filter", label])).out.split(/\s+/).filter(Boolean);
  if (nets.length > 0) await dockerCli(["network", "rm", ...nets]);
  await new Promise<void>((resolve) =>
    execFile("nft", ["delete", "table", "inet", egressTableName(storageId)], () => resolve()),
  );
}

/** Deletes the btrfs subvolumes under a test volume root (rm -rf cannot remove subvolumes). */
export async function deleteSubvolumes(root: string): Promise<void> {
  let names: string[] = [];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) {
    // Retained copies are subvolumes one level down (retention/retained-volumes.ts).
    if (name === ".fred-retained") await deleteSubvolumes(join(root, name));
    await new Promise<void>((resolve) =>
      execFile("btrfs", ["subvolume", "delete", join(root, name)], () => resolve()),
    );
  }
}

export async function startInProcess(setup: DockerTestSetup): Promise<RunningDockerBackend> {
  const config = loadDockerBackendConfig(setup.configPath, {});
  return startDockerBackend(config, {
    logger: createLogger("docker-test", process.env.TEST_LOG_LEVEL ?? "silent"),
  });
}

export type DockerProcess = Launched<BackendReady>;

/** `fred backend docker -c <config>` as a real process; ready when it prints its JSON line. */
export function spawnDockerBackend(
  configPath: string,
  timeoutMs = 60_000,
  env: Record<string, string> = {},
): Promise<DockerProcess> {
  return launchFred<BackendReady>(["backend", "docker", "-c", configPath], {
    label: "docker backend",
    env,
    readyTimeoutMs: timeoutMs,
  });
}
