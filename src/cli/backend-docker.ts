import type { Command } from "commander";
import { loadDockerBackendConfig, redactedConfig } from "../backend/docker/config.ts";
import { FredError } from "../core/errors.ts";
import { createLogger } from "../log.ts";
import { printJson, say } from "./output.ts";

/**
 * `fred backend docker -c docker-backend.yaml`: the Docker backend providers run on each
 * host. First start binds a storage identity into a new journal and exits; every later
 * start verifies it and serves the backend contract until SIGINT/SIGTERM.
 */
const HELP = `
Examples:
  $ fred backend docker -c docker-backend.yaml --initialize-storage-identity new
  {"storage_id":"…"}
  $ fred backend docker -c docker-backend.yaml
  {"url":"http://127.0.0.1:9001","name":"docker","storage_id":"…"}

The first command is the first start: it creates the journal at db_path, binds a fresh
storage id, prints it and exits 0 (exit 1 when the journal is already bound). The second
runs the backend until SIGINT/SIGTERM, printing its JSON line once it listens.

Environment overrides of file keys:
  DOCKER_BACKEND_ADDR              listen_addr
  DOCKER_BACKEND_CALLBACK_SECRET   callback_secret (≥ 32 bytes)
  DOCKER_BACKEND_PREVIOUS_CALLBACK_SECRET  previous_callback_secret (verify-only, during rotation)
  DOCKER_BACKEND_HOST_ADDRESS      host_address
  DOCKER_HOST                      docker_host
  DOCKER_BACKEND_MAX_REQUEST_BODY_SIZE  max_request_body_size
  FRED_LOG_LEVEL overrides log_level.

Start is refused when volume_data_path is not btrfs with quotas enabled (unless
volume_filesystem: none), when the Docker engine does not answer, or when the journal is
missing, unbound or bound to another storage id. Every key: examples/docker-backend.yaml
and docs/docker-backend.md.`;

export function registerDockerBackendCommand(backend: Command): void {
  backend
    .command("docker")
    .description("Docker backend: hardened tenant containers with enforced disk sizes on this host")
    .option("-c, --config <file>", "configuration file", "docker-backend.yaml")
    .option("--initialize-storage-identity <mode>", 'bind a fresh storage identity ("new") and exit')
    .addHelpText("after", HELP)
    .action(async (opts: { config: string; initializeStorageIdentity?: string }) => {
      // Imported here: dockerode's tree (~35 MB resident) has no business in other commands.
      const { initializeDockerBackendStorage, startDockerBackend } = await import(
        "../backend/docker/main.ts"
      );
      const config = loadDockerBackendConfig(opts.config, process.env);
      if (opts.initializeStorageIdentity !== undefined) {
        if (opts.initializeStorageIdentity !== "new") {
          throw new FredError("ERR_USAGE", '--initialize-storage-identity takes exactly "new"');
        }
        printJson({ storage_id: initializeDockerBackendStorage(config) });
        return;
      }
      const logger = createLogger("docker-backend", process.env.FRED_LOG_LEVEL ?? config.logLevel);
      logger.info({ config: redactedConfig(config) }, "starting docker backend");
      const running = await startDockerBackend(config, { logger, failpoints: process.env.FRED_FAILPOINTS });
      printJson({ url: running.url, name: config.name, storage_id: running.storageId });
      await new Promise<void>((resolve) => {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      });
      say("docker backend: stopping…");
      await running.close();
    });
}
