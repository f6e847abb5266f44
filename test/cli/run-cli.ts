import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export const FRED_BIN = fileURLToPath(new URL("../../bin/fred.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `fred <args>` as a real child process and collects its output. With `cleanEnv`
 * the child sees only PATH, HOME and `env` (nothing the test process happens to have set).
 */
export function runFred(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; input?: string; cleanEnv?: boolean } = {},
): Promise<CliResult> {
  const base = opts.cleanEnv ? { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" } : process.env;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FRED_BIN, ...args], {
      env: { ...base, ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? "");
  });
}
