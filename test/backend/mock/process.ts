import { randomUUID } from "node:crypto";
import { type Launched, launchFred } from "../../support/index.ts";

/** The ready line a `fred backend …` process prints on stdout. */
export interface BackendReady {
  url: string;
  storage_id: string;
}

/** `fred backend mock` as a real child process, configured by env. */
export type MockProcess = Launched<BackendReady>;

/**
 * The environment of a mock on a free loopback port with a fresh storage identity, signing
 * with `secret`; `dbPath` makes its journal a file (else in memory), `extra` adds to it.
 */
export function mockEnv(
  secret: string,
  dbPath?: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: randomUUID(),
    MOCK_BACKEND_CALLBACK_SECRET: secret,
    ...(dbPath === undefined ? {} : { MOCK_BACKEND_DB_PATH: dbPath }),
    ...extra,
  };
}

export function spawnMock(env: Record<string, string>, timeoutMs = 30_000): Promise<MockProcess> {
  return launchFred<BackendReady>(["backend", "mock"], {
    label: "mock backend",
    env,
    readyTimeoutMs: timeoutMs,
  });
}
