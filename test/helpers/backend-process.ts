import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";

/**
 * A `fred backend …` command as a real child process: ready when it prints its
 * {"url","storage_id",…} line on stdout, stopped with a signal (SIGKILL for crash tests).
 */
export interface BackendProcess {
  url: string;
  storageId: string;
  child: ChildProcess;
  stderr: () => string;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

const FRED = new URL("../../bin/fred.js", import.meta.url).pathname;

export async function spawnBackendProcess(
  label: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<BackendProcess> {
  const child = spawn(process.execPath, [FRED, ...args], {
    env: { ...process.env, FRED_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = once(child, "exit").then(([code]) => code as number | null);
  const ready = new Promise<{ url: string; storage_id: string }>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.once("line", (line) => {
      try {
        resolve(JSON.parse(line));
      } catch (err) {
        reject(err);
      }
    });
    void exited.then((code) => reject(new Error(`${label} exited with ${code}: ${stderr}`)));
    setTimeout(
      () => reject(new Error(`${label} not ready in ${timeoutMs} ms: ${stderr}`)),
      timeoutMs,
    ).unref();
  });
  let info: { url: string; storage_id: string };
  try {
    info = await ready;
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
  return {
    url: info.url,
    storageId: info.storage_id,
    child,
    stderr: () => stderr,
    async kill(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
