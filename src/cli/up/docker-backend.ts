import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { stringify } from "yaml";
import { parseDockerBackendConfig } from "../../backend/docker/config.ts";
import { LABEL } from "../../backend/docker/names.ts";
import { openJournalDatabase } from "../../backend/kit/index.ts";
import { parseDurationMs } from "../../core/duration.ts";
import { FredError } from "../../core/errors.ts";
import { readKeys } from "../../devnet/home.ts";
import { createLogger } from "../../log.ts";
import { persistent } from "../backend.ts";
import type { UpComponent } from "./component.ts";
import { DEMO_IMAGE, demoManifest, ensureDemoImage } from "./demo-image.ts";
import { hasCaddy, INGRESS_DOMAIN, startLocalCaddy } from "./local-caddy.ts";
import { canPrepareBtrfs, prepareLoopbackBtrfs } from "./loopback-btrfs.ts";

/**
 * The Docker backend inside `fred up --docker`: real containers on the local engine,
 * published on 127.0.0.1 only, with durable volumes on a loopback btrfs when running as
 * root (otherwise without volumes: disk-bearing SKUs are then refused). Its config is
 * generated from the devnet's SKUs on every start; journal, storage id and secret persist
 * under <home>/docker-backend/, so a second `fred up --docker` resumes the same leases.
 * The engine client and the backend are imported when used: every `fred` process loads
 * this module, and dockerode's tree (ssh2, grpc) costs ~35 MB of memory in each.
 */
const engine = () => import("../../backend/docker/engine.ts");
const backend = () => import("../../backend/docker/main.ts");
const PROFILES: Record<string, { cpu_cores: number; memory_mb: number; disk_mb: number }> = {
  small: { cpu_cores: 0.25, memory_mb: 128, disk_mb: 256 },
  medium: { cpu_cores: 0.5, memory_mb: 256, disk_mb: 512 },
  large: { cpu_cores: 1, memory_mb: 512, disk_mb: 1024 },
};

function shortAge(text: string): boolean {
  const ms = parseDurationMs(text);
  return ms > 0 && ms < 3_600_000;
}

function profileFor(skuName: string): string {
  return Object.keys(PROFILES).find((p) => skuName.endsWith(p)) ?? "small";
}

/** The engine `fred up --docker` uses: DOCKER_HOST as the docker CLI reads it, else the local socket. */
function upDockerHost(): string {
  const fromEnv = process.env.DOCKER_HOST?.trim();
  return fromEnv === undefined || fromEnv === "" ? "unix:///var/run/docker.sock" : fromEnv;
}

export const dockerBackendUpComponent: UpComponent = {
  name: "docker backend",
  async start(ctx) {
    const devnetHome = ctx.facts.get("devnet_home");
    const keys = devnetHome === undefined ? undefined : readKeys(devnetHome);
    if (keys === undefined)
      throw new FredError("ERR_UP_ORDER", "the docker backend needs the devnet's SKUs first");
    const dir = resolve(ctx.home, "docker-backend");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const dockerHost = upDockerHost();
    const docker = (await engine()).connectDocker(dockerHost);
    try {
      await docker.ping({ abortSignal: AbortSignal.timeout(5000) } as never);
    } catch {
      throw new FredError(
        "ERR_USAGE",
        `fred up --docker: no Docker engine answers at ${dockerHost} (start dockerd, set DOCKER_HOST, or run fred up without --docker)`,
      );
    }
    // A given volume path is the operator's btrfs (the backend checks it is one, with
    // quotas); otherwise a loopback btrfs when root can make one, else no volumes.
    const given = ctx.facts.get("volume_path");
    const btrfs = given !== undefined || canPrepareBtrfs();
    const volumes = given ?? (btrfs ? prepareLoopbackBtrfs(dir) : join(dir, "no-volumes"));
    const maxAge = ctx.facts.get("retention_max_age") ?? "2160h";
    const skus = keys.skus.filter((s) => !s.billing_only);
    const secret = persistent(join(dir, "callback-secret"), () => randomBytes(32).toString("hex"));
    // The ingress proxy when Caddy is installed (https names); without it, ports only.
    const caddy = hasCaddy() ? await startLocalCaddy(ctx.home) : undefined;
    try {
      const doc = {
        name: "docker",
        listen_addr: "127.0.0.1:0",
        callback_secret: secret,
        db_path: join(dir, "journal.db"),
        docker_host: dockerHost,
        allowed_registries: ["docker.io"],
        // The demo image is built on this machine (no registry has it): used as found.
        image_pull_policy: "if-not-present",
        host_address: "127.0.0.1",
        host_bind_ip: "127.0.0.1",
        total_cpu_cores: 2,
        total_memory_mb: 2048,
        total_disk_mb: btrfs ? 1536 : 0,
        sku_mapping: Object.fromEntries(skus.map((s) => [s.uuid, profileFor(s.name)])),
        sku_profiles: Object.fromEntries(
          Object.entries(PROFILES).map(([k, p]) => [k, { ...p, disk_mb: btrfs ? p.disk_mb : 0 }]),
        ),
        volume_data_path: volumes,
        volume_filesystem: btrfs ? "btrfs" : "none",
        // A closed demo lease keeps its data (a btrfs snapshot) so `fred lease restore` can
        // bring it back; without volumes there is nothing to keep.
        retain_on_close: btrfs,
        retention_max_age: maxAge,
        // A short age limit should show within seconds, as a person trying it expects.
        retention_reap_interval: shortAge(maxAge) ? "1s" : "1h",
        startup_verify_duration: "2s",
        // The demo image is made on this host (no registry to pull it from again): never collected.
        image_gc_after: "0s",
        ...(caddy === undefined
          ? {}
          : {
              ingress: {
                enabled: true,
                wildcard_domain: INGRESS_DOMAIN,
                admin_url: caddy.adminUrl,
                https_listen: caddy.httpsListen,
                tls: "internal",
              },
            }),
      };
      writeFileSync(
        join(dir, "docker-backend.yaml"),
        `# Generated by fred up --docker on every start; edits are overwritten.\n${stringify(doc)}`,
        { mode: 0o600 },
      );
      const config = parseDockerBackendConfig(doc, { baseDir: dir });
      const { initializeDockerBackendStorage, startDockerBackend } = await backend();
      if (!existsSync(config.dbPath)) initializeDockerBackendStorage(config);
      const image = await ensureDemoImage(docker);
      const demoDir = join(ctx.home, "demo");
      mkdirSync(demoDir, { recursive: true });
      writeFileSync(join(demoDir, "notes.json"), demoManifest(image));
      writeFileSync(join(demoDir, "notes-v2.json"), demoManifest(image, "v2"));
      const ca = ctx.facts.get("tls_ca_file");
      const running = await startDockerBackend(config, {
        logger: createLogger("docker-backend"),
        ...(ca === undefined ? {} : { callbackCaPem: readFileSync(ca, "utf8") }),
      });
      ctx.facts.set("backend_url", running.url);
      ctx.facts.set("backend_name", config.name);
      ctx.facts.set("backend_storage_id", running.storageId);
      ctx.facts.set("backend_secret", secret);
      ctx.facts.set("demo_manifest", join(demoDir, "notes.json"));
      if (caddy !== undefined) {
        ctx.facts.set("ingress_ca", caddy.caFile(config.name));
        ctx.facts.set("ingress_listen", caddy.httpsListen);
      }
      return {
        summary: [
          `docker backend ${running.url}  (storage ${running.storageId}; containers on 127.0.0.1)`,
          btrfs
            ? `               volumes: ${given === undefined ? `loopback btrfs under ${dir}` : given}; closed leases kept ${maxAge} for restore`
            : "               no volumes (not root): disk-bearing SKUs are refused",
          `               demo image ${DEMO_IMAGE}, manifests in ${demoDir}`,
          caddy === undefined
            ? "               no caddy on PATH: web services answer on http://127.0.0.1:<port> only (install caddy for https names)"
            : `               ingress: https://<name>.${INGRESS_DOMAIN} on ${caddy.httpsListen} (caddy; CA ${caddy.caFile(config.name)})`,
        ],
        stop: async () => {
          await running.close();
          await caddy?.stop();
        },
      };
    } catch (err) {
      await caddy?.stop();
      throw err;
    }
  },
};

/**
 * `fred up --reset` with the Docker backend: the containers and networks the old journal's
 * storage identity labelled are removed too (they belong to the chain being thrown away and
 * no later backend would ever adopt them). Nothing is touched without that label.
 */
export async function removeUpContainers(home: string): Promise<number> {
  const db = join(resolve(home, "docker-backend"), "journal.db");
  if (!existsSync(db)) return 0;
  const opened = openJournalDatabase({ path: db, mode: "verify" });
  opened.database.close();
  const docker = (await engine()).connectDocker(upDockerHost());
  const label = `${LABEL.storageId}=${opened.storageId}`;
  const containers = await docker.listContainers({ all: true, filters: { label: [label] } }).catch(() => []);
  for (const c of containers) await docker.getContainer(c.Id).remove({ force: true, v: true });
  const networks = await docker.listNetworks({ filters: { label: [label] } }).catch(() => []);
  for (const n of networks)
    await docker
      .getNetwork(n.Id)
      .remove()
      .catch(() => {});
  return containers.length;
}
