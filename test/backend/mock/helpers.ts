import { randomUUID } from "node:crypto";
import type { RunningBackend } from "../../../src/backend/kit/index.ts";
import { loadMockBackendConfig } from "../../../src/backend/mock/config.ts";
import { startMockBackend } from "../../../src/backend/mock/main.ts";
import { createLogger } from "../../../src/log.ts";

export const SECRET = "mock-backend-test-secret-0123456789abcdef";
export const PREVIOUS_SECRET = "mock-backend-previous-secret-0123456789ab";
export const SKU = "0190f3a2-7c1e-7000-8000-00000000a001";

export function manifest(service: string, image = "docker.io/library/nginx:1.25"): Uint8Array {
  return Buffer.from(JSON.stringify({ services: { [service]: { image } } }));
}

/** An in-process mock backend on a free loopback port (real HTTP, real SQLite). */
export async function startTestMock(env: Record<string, string> = {}): Promise<RunningBackend> {
  const config = loadMockBackendConfig({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_NAME: "mock-test",
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    MOCK_BACKEND_PREVIOUS_CALLBACK_SECRET: PREVIOUS_SECRET,
    MOCK_BACKEND_CAPACITY: JSON.stringify({ cpu_cores: 64, memory_mb: 65536, disk_mb: 1048576 }),
    ...env,
  });
  return startMockBackend(config, {
    logger: createLogger("mock-test", process.env.TEST_LOG_LEVEL ?? "silent"),
  });
}
