import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { initializeStorageIdentity } from "../backend/kit/index.ts";
import { loadMockBackendConfig } from "../backend/mock/config.ts";
import { startMockBackend } from "../backend/mock/main.ts";
import { FredError } from "../core/errors.ts";
import { newUuidV4 } from "../core/uuid.ts";
import { createLogger } from "../log.ts";
import { registerDockerBackendCommand } from "./backend-docker.ts";
import { printJson, say } from "./output.ts";
import type { UpComponent } from "./up/component.ts";

/**
 * `fred backend <kind>`: backend processes. Each kind registers one subcommand on the
 * `backend` command returned by `registerBackendCommands`.
 */
const MOCK_HELP = `
Environment (the mock reads no config file):
  MOCK_BACKEND_STORAGE_ID        canonical UUIDv4 of this deployment's storage (required)
  MOCK_BACKEND_CALLBACK_SECRET   HMAC key for requests and callbacks, ≥ 32 bytes (required)
  MOCK_BACKEND_PREVIOUS_CALLBACK_SECRET  verify-only previous key during rotation
  MOCK_BACKEND_ADDR              listen address: host:port (default 127.0.0.1:9000), or unix:/absolute/path (a socket, mode 0660)
  MOCK_BACKEND_NAME              backend name; must equal providerd's backends[].name (default mock-backend)
  MOCK_BACKEND_DELAY             simulated provisioning time, Go duration (default 0s)
  MOCK_BACKEND_DB_PATH           SQLite journal file; unset = in-memory journal (lost on exit)
  MOCK_BACKEND_SKUS              JSON map SKU UUID → {"cpu_cores","memory_mb","disk_mb"}; unset = any SKU, 0.5/512/1024
  MOCK_BACKEND_CAPACITY          JSON {"cpu_cores","memory_mb","disk_mb"} totals (default 256 / 524288 / 4194304)
  MOCK_BACKEND_ALLOWED_REGISTRIES  comma list of image registries (default docker.io,ghcr.io)
  MOCK_BACKEND_RESERVATION_TTL   unstarted reservations expire after this (default 10m)
  MOCK_BACKEND_RECONCILE_INTERVAL  recovery pass interval (default 5m)
  MOCK_BACKEND_FAIL_RATE         share of provisions that fail at start, 0..1 (default 0)
  MOCK_BACKEND_FAIL_LEASES       comma list of lease UUIDs that fail at start
  MOCK_BACKEND_HANG_LEASES       comma list of lease UUIDs whose start never completes
  MOCK_BACKEND_TLS_CERT_FILE / MOCK_BACKEND_TLS_KEY_FILE   serve HTTPS (set both)
  MOCK_BACKEND_TLS_CLIENT_CA_FILE   mutual TLS: client certificates must chain to this PEM CA bundle
  MOCK_BACKEND_TLS_CLIENT_ALLOWED_NAMES   comma list; the client certificate's CN or a DNS SAN must match one (else 403)
  MOCK_BACKEND_TLS_SKIP_VERIFY   do not verify the callback receiver's TLS certificate (development only)
  MOCK_BACKEND_CLIENT_TIMEOUT    per-attempt callback timeout (default 10s)
  MOCK_BACKEND_READ_TIMEOUT / _WRITE_TIMEOUT / _IDLE_TIMEOUT   HTTP server timeouts (15s / 15s / 60s)

Prints {"url","name","storage_id"} on stdout once it listens; logs go to stderr.

Examples:
  $ export MOCK_BACKEND_STORAGE_ID=$(uuidgen -r) MOCK_BACKEND_CALLBACK_SECRET=test-secret-at-least-32-characters-long
  $ fred backend mock
  $ MOCK_BACKEND_DB_PATH=.fred-dev/mock.db fred backend mock --initialize-storage-identity new
  $ MOCK_BACKEND_DB_PATH=.fred-dev/mock.db MOCK_BACKEND_STORAGE_ID=<printed id> MOCK_BACKEND_DELAY=2s fred backend mock`;

export function registerBackendCommands(program: Command): Command {
  const backend = program
    .command("backend")
    .description("Run a compute backend (the process providerd provisions leases on)");
  backend
    .command("mock")
    .description(
      "Backend with a fake substrate and the real journal, outbox and accounting (development, tests)",
    )
    .addHelpText("after", MOCK_HELP)
    .option(
      "--initialize-storage-identity <new>",
      "bind a fresh storage id into a new, empty MOCK_BACKEND_DB_PATH journal, print it and exit",
    )
    .action(async (opts: { initializeStorageIdentity?: string }) => {
      if (opts.initializeStorageIdentity !== undefined) {
        if (opts.initializeStorageIdentity !== "new")
          throw new FredError("ERR_USAGE", "the only value is: new");
        const path = process.env.MOCK_BACKEND_DB_PATH;
        if (!path)
          throw new FredError("ERR_USAGE", "--initialize-storage-identity needs MOCK_BACKEND_DB_PATH");
        printJson({ storage_id: initializeStorageIdentity(path) });
        return;
      }
      const config = loadMockBackendConfig(process.env);
      const running = await startMockBackend(config, { logger: createLogger("mock-backend") });
      // Handlers first: whoever reads the ready line may signal us at once.
      const stopped = new Promise<void>((resolve) => {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      });
      printJson({ url: running.url, name: config.name, storage_id: running.storageId });
      await stopped;
      say("mock backend: stopping…");
      await running.close();
    });
  // Other backend kinds add their subcommand here, one line each.
  registerDockerBackendCommand(backend);
  return backend;
}

/** Reads a value kept under the `fred up` home, creating it once. */
export function persistent(path: string, make: () => string): string {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    const value = make();
    writeFileSync(path, `${value}\n`, { mode: 0o600, flag: "wx" });
    return value;
  }
}

/** `fred up` component: a mock backend with a persisted storage id, secret and journal. */
export const mockBackendUpComponent: UpComponent = {
  name: "mock backend",
  async start(ctx) {
    const dir = join(ctx.home, "mock-backend");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const storageId = persistent(join(dir, "storage-id"), newUuidV4);
    const secret = persistent(join(dir, "callback-secret"), () => randomBytes(32).toString("hex"));
    const config = loadMockBackendConfig({
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_NAME: "mock",
      MOCK_BACKEND_STORAGE_ID: storageId,
      MOCK_BACKEND_CALLBACK_SECRET: secret,
      MOCK_BACKEND_DB_PATH: join(dir, "journal.db"),
    });
    const ca = ctx.facts.get("tls_ca_file");
    const running = await startMockBackend(config, {
      logger: createLogger("mock-backend"),
      ...(ca === undefined ? {} : { callbackCaPem: readFileSync(ca, "utf8") }),
    });
    ctx.facts.set("backend_url", running.url);
    ctx.facts.set("backend_name", config.name);
    ctx.facts.set("backend_storage_id", running.storageId);
    ctx.facts.set("backend_secret", secret);
    return {
      summary: [`mock backend   ${running.url}  (name ${config.name}, storage ${running.storageId})`],
      stop: () => running.close(),
    };
  },
};
