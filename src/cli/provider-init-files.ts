/**
 * The files `fred provider init` writes: a providerd config, a Docker-backend config and
 * the HMAC secret they share. Rendering is pure; writing refuses every existing name
 * before it creates any file, so a second run never clobbers an edited config.
 */
import { randomBytes } from "node:crypto";
import { existsSync, statfsSync } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { availableParallelism, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { stringify } from "yaml";
import { FredError } from "../core/errors.ts";
import { isUnixAddress } from "../core/unix-address.ts";

export interface SkuProfile {
  name: string;
  uuid: string;
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
}

/** What the Docker host offers tenants in all: the backend's total_* keys. */
export interface HostCapacity {
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
}

/**
 * This machine's capacity, for a Docker host that is the machine running init: every core,
 * the memory less what the system and the backend keep (a tenth, at least 1 GiB), and
 * the free space of the file system that will hold `volumeDir` (or its nearest existing
 * parent), less a tenth. The flags override each figure for another host.
 */
export function localCapacity(volumeDir: string): HostCapacity {
  const memoryMb = Math.floor(totalmem() / 2 ** 20);
  let dir = volumeDir;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  const fs = statfsSync(dir);
  const freeMb = Math.floor((fs.bavail * fs.bsize) / 2 ** 20);
  return {
    cpuCores: availableParallelism(),
    memoryMb: Math.max(0, memoryMb - Math.max(1024, Math.ceil(memoryMb / 10))),
    diskMb: Math.floor(freeMb * 0.9),
  };
}

/** The SKUs that do not fit the host at all (one lease of them alone exceeds a total). */
export function skusExceeding(capacity: HostCapacity, skus: readonly SkuProfile[]): string[] {
  return skus
    .filter(
      (s) => s.cpuCores > capacity.cpuCores || s.memoryMb > capacity.memoryMb || s.diskMb > capacity.diskMb,
    )
    .map((s) => s.name);
}

export interface InitPlan {
  providerUuid: string;
  providerAddress: string;
  chainId: string;
  rpcUrl: string;
  keyringDir: string;
  keyringBackend: string;
  keyName: string;
  /** Where providerd and the backend keep their databases and volumes. */
  stateDir: string;
  backendUrl: string;
  /** Where backends send callbacks: providerd's API as the backend host reaches it. */
  callbackBaseUrl: string;
  /** What tenants connect to on the Docker host. */
  hostAddress: string;
  skus: readonly SkuProfile[];
  capacity: HostCapacity;
}

export const INIT_FILES = {
  providerd: "providerd.yaml",
  backend: "docker-backend.yaml",
  secret: "backend-hmac.secret",
} as const;

/** A fresh 32-byte HMAC key, hex (what `openssl rand -hex 32` gives). */
export function newHmacSecret(): string {
  return randomBytes(32).toString("hex");
}

/** The node's event socket: CometBFT serves it at /websocket on the RPC origin. */
export function websocketUrlOf(rpcUrl: string): string {
  const url = new URL(rpcUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.pathname = `${url.pathname.replace(/\/$/, "")}/websocket`;
  return url.toString();
}

export function renderProviderdConfig(plan: InitPlan, secret: string): string {
  const config = {
    provider_uuid: plan.providerUuid,
    provider_address: plan.providerAddress,
    chain_id: plan.chainId,
    rpc_url: plan.rpcUrl,
    websocket_url: websocketUrlOf(plan.rpcUrl),
    keyring_dir: plan.keyringDir,
    keyring_backend: plan.keyringBackend,
    key_name: plan.keyName,
    api_listen_addr: `:${portOf(plan.callbackBaseUrl)}`,
    callback_base_url: plan.callbackBaseUrl,
    placement_store_db_path: join(plan.stateDir, "placements.db"),
    payload_store_db_path: join(plan.stateDir, "payloads.db"),
    // Hourly online snapshots of the placement store, 24 kept: better on another disk.
    placement_snapshot_dir: join(plan.stateDir, "backups"),
    backends: [
      {
        name: "docker",
        url: plan.backendUrl,
        hmac_secret: secret,
        skus: plan.skus.map((s) => s.uuid),
        default: true,
      },
    ],
  };
  return `# Written by fred provider init. Keys: docs/providerd-config.md.\n${stringify(config)}`;
}

/** The URL's port, or its scheme's default. */
function portOf(urlText: string): string {
  const url = new URL(urlText);
  return url.port || (url.protocol === "https:" ? "443" : "80");
}

export function renderBackendConfig(plan: InitPlan, secret: string): string {
  const config = {
    name: "docker",
    listen_addr: isUnixAddress(plan.backendUrl)
      ? plan.backendUrl
      : `${new URL(plan.backendUrl).hostname}:${portOf(plan.backendUrl)}`,
    callback_secret: secret,
    db_path: join(plan.stateDir, "docker-backend.db"),
    docker_host: "unix:///var/run/docker.sock",
    host_address: plan.hostAddress,
    total_cpu_cores: plan.capacity.cpuCores,
    total_memory_mb: plan.capacity.memoryMb,
    total_disk_mb: plan.capacity.diskMb,
    sku_mapping: Object.fromEntries(plan.skus.map((s) => [s.uuid, s.name])),
    sku_profiles: Object.fromEntries(
      plan.skus.map((s) => [s.name, { cpu_cores: s.cpuCores, memory_mb: s.memoryMb, disk_mb: s.diskMb }]),
    ),
    volume_data_path: join(plan.stateDir, "volumes"),
    volume_filesystem: "btrfs",
  };
  const header = [
    "# Written by fred provider init. Keys: docs/docker-backend.md.",
    "# total_*: what this host offers tenants in all (init's --host-* flags; check them against the host).",
  ];
  return `${header.join("\n")}\n${stringify(config)}`;
}

/** The files that already exist in `dir` under the names init writes (it refuses them). */
export function existingInitFiles(dir: string): string[] {
  return Object.values(INIT_FILES)
    .map((name) => join(dir, name))
    .filter((path) => existsSync(path));
}

/**
 * Writes each file 0600 (each holds the HMAC secret) with O_EXCL, so a file that
 * appeared since the check is still never overwritten.
 */
export async function writeInitFiles(dir: string, files: Record<string, string>): Promise<string[]> {
  const taken = existingInitFiles(dir);
  if (taken.length > 0) throw refuseOverwrite(taken);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const written: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(path, "wx", 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") throw refuseOverwrite([path]);
      throw err;
    }
    try {
      await handle.writeFile(text, "utf8");
    } finally {
      await handle.close();
    }
    written.push(path);
  }
  return written;
}

export function refuseOverwrite(paths: readonly string[]): FredError {
  return new FredError(
    "ERR_USAGE",
    `refusing to overwrite ${paths.join(", ")}: move it away or choose another --out directory`,
  );
}
