import { type BackendProcess, spawnBackendProcess } from "../../helpers/backend-process.ts";

/** `fred backend mock` as a real child process, configured by env. */
export type MockProcess = BackendProcess;

export function spawnMock(env: Record<string, string>, timeoutMs = 30_000): Promise<MockProcess> {
  return spawnBackendProcess("mock backend", ["backend", "mock"], env, timeoutMs);
}

/** Polls `check` until it returns true or the deadline passes (no fixed sleeps). */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
