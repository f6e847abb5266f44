import { type Launched, launchFred } from "../../support/index.ts";

/** The ready line a `fred backend …` process prints on stdout. */
export interface BackendReady {
  url: string;
  storage_id: string;
}

/** `fred backend mock` as a real child process, configured by env. */
export type MockProcess = Launched<BackendReady>;

export function spawnMock(env: Record<string, string>, timeoutMs = 30_000): Promise<MockProcess> {
  return launchFred<BackendReady>(["backend", "mock"], {
    label: "mock backend",
    env,
    readyTimeoutMs: timeoutMs,
  });
}
