import { type ChildProcess, execFile, spawn } from "node:child_process";
import { promisify } from "node:util";

/**
 * Real `fred …` processes for integration tests: start one, wait (with a deadline) for
 * its first JSON line on stdout, and stop it by its own pid.
 */
export interface Started<T> {
  child: ChildProcess;
  ready: T;
  stderr: () => string;
  stop(): Promise<void>;
}

export async function startFred<T>(
  args: string[],
  env: Record<string, string> = {},
  deadlineMs = 120_000,
): Promise<Started<T>> {
  // FRED_NODE_FLAGS (space-separated) go to node itself: Node 20 refuses --cpu-prof in NODE_OPTIONS.
  const nodeFlags = env.FRED_NODE_FLAGS?.split(" ").filter((f) => f !== "") ?? [];
  const child = spawn(process.execPath, [...nodeFlags, "bin/fred.js", ...args], {
    env: { ...process.env, FRED_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const ready = await new Promise<T>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      reject(new Error(`fred ${args.join(" ")} not ready within ${deadlineMs} ms:\n${err}`));
    }, deadlineMs);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf("\n");
      if (nl >= 0) {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(out.slice(0, nl)) as T);
        } catch (e) {
          reject(e);
        }
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`fred ${args.join(" ")} exited (${code}) before ready:\n${err}`));
    });
  }).catch(async (e) => {
    await stop();
    throw e;
  });
  return { child, ready, stderr: () => err, stop };
}

const exec = promisify(execFile);

/** Runs a short `fred …` command to completion. */
export async function runFred(args: string[], env: Record<string, string> = {}) {
  try {
    const r = await exec(process.execPath, ["bin/fred.js", ...args], {
      env: { ...process.env, FRED_LOG_LEVEL: "warn", ...env },
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
