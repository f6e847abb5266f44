import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * The one launcher of the test suite: `bin/fred.js …` or a tsx entry as a real child process.
 * It waits for the process's ready line (by default the first stdout line, parsed as JSON),
 * keeps the tail of both output streams for failure messages, and stops the whole process
 * group: the child leads its own group, so whatever it spawned goes with it. A handle supports
 * `await using` (Node ≥ 20.4 defines Symbol.asyncDispose; tsx lowers the syntax). Groups not
 * stopped by the time the test process exits are killed then.
 */

export const FRED_BIN = fileURLToPath(new URL("../../bin/fred.js", import.meta.url));
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export type Stream = "stdout" | "stderr";

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LaunchOptions<T> {
  /** Names the process in messages (default: the command line). */
  label?: string;
  /** Added to the environment (over `process.env`, or over PATH and HOME with `cleanEnv`). */
  env?: Record<string, string | undefined>;
  cleanEnv?: boolean;
  cwd?: string;
  /** Flags for node itself, e.g. `--cpu-prof` (Node 20 refuses it in NODE_OPTIONS; 24 takes it there). */
  nodeFlags?: string[];
  /**
   * Recognises the ready line: returns the ready value, or undefined for "not this line".
   * Default: the first stdout line, parsed as JSON.
   */
  ready?: (line: string, stream: Stream) => T | undefined;
  /** Deadline for the ready line (default 60 s); past it the group is killed. */
  readyTimeoutMs?: number;
}

export interface Launched<T> extends AsyncDisposable {
  readonly label: string;
  readonly child: ChildProcess;
  readonly pid: number;
  /** What `ready` returned for the ready line. */
  readonly ready: T;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<Exit>;
  running(): boolean;
  stdout(): string;
  stderr(): string;
  /** The last `chars` of stderr, labelled, for failure messages. */
  logTail(chars?: number): string;
  /** Sends `signal` to the process itself (not its group), as an operator would. */
  signal(signal: NodeJS.Signals): void;
  /** Waits for the process to exit by itself; throws (with the log tail) after `timeoutMs`. */
  waitExit(timeoutMs?: number): Promise<Exit>;
  /** SIGKILL to the whole group; resolves once the process is gone. */
  kill(): Promise<Exit>;
  /** SIGTERM, then SIGKILL to the group after `graceMs` (default 10 s); leftovers are killed too. */
  stop(graceMs?: number): Promise<Exit>;
}

/** Output kept per stream: enough for any ready line or failure message, bounded for long runs. */
const KEEP_CHARS = 1_000_000;

/**
 * Groups still running. A launched child does not share the test process's group, so a
 * Ctrl-C in the terminal does not reach it: when the test process exits or is signalled,
 * the groups are killed, then the signal is raised again to end the process as it would have.
 */
const live = new Set<number>();
let reaperInstalled = false;

function installReaper(): void {
  if (reaperInstalled) return;
  reaperInstalled = true;
  const killAll = () => {
    for (const pid of live) killGroup(pid, "SIGKILL");
  };
  process.once("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      killAll();
      process.kill(process.pid, signal);
    });
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone
  }
}

/** `fred <args>` as a real process; resolves once its ready line has been seen. */
export function launchFred<T = unknown>(
  args: string[],
  options: LaunchOptions<T> = {},
): Promise<Launched<T>> {
  return launch([FRED_BIN, ...args], { label: `fred ${args.join(" ")}`, ...options });
}

/** A TypeScript entry file run through tsx, with `args`; resolves once its ready line has been seen. */
export function launchScript<T = unknown>(
  entry: string,
  args: string[] = [],
  options: LaunchOptions<T> = {},
): Promise<Launched<T>> {
  return launch(["--import", "tsx", entry, ...args], { label: `tsx ${entry}`, ...options });
}

/**
 * Any program (e.g. an installed `fred`, found on the PATH that `options.env` gives) as a
 * real process; resolves once its ready line has been seen.
 */
export function launchProgram<T = unknown>(
  program: string,
  args: string[],
  options: LaunchOptions<T> = {},
): Promise<Launched<T>> {
  return launch(args, { label: `${program} ${args.join(" ")}`, ...options }, program);
}

function baseEnv(cleanEnv: boolean | undefined): NodeJS.ProcessEnv {
  if (cleanEnv) return { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" };
  return { ...process.env, FRED_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn" };
}

const jsonFirstStdoutLine = (line: string, stream: Stream): unknown =>
  stream === "stdout" ? JSON.parse(line) : undefined;

async function launch<T>(
  nodeArgs: string[],
  options: LaunchOptions<T>,
  program: string = process.execPath,
): Promise<Launched<T>> {
  const label = options.label ?? nodeArgs.join(" ");
  const recognise = options.ready ?? (jsonFirstStdoutLine as (line: string, stream: Stream) => T);
  const child = spawn(program, [...(options.nodeFlags ?? []), ...nodeArgs], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...baseEnv(options.cleanEnv), ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const pid = child.pid;
  if (pid === undefined) {
    const err = await new Promise<Error>((resolve) => child.once("error", resolve));
    throw new Error(`${label} could not be started: ${err.message}`);
  }
  installReaper();
  live.add(pid);
  const text: Record<Stream, string> = { stdout: "", stderr: "" };
  const exited = new Promise<Exit>((resolve) =>
    child.once("exit", (code, signal) => {
      resolve({ code, signal });
    }),
  );

  const logTail = (chars = 6000) => `${label} stderr (last ${chars} chars):\n${text.stderr.slice(-chars)}`;
  const ready = new Promise<T>((resolve, reject) => {
    const partial: Record<Stream, string> = { stdout: "", stderr: "" };
    let done = false;
    const settle = (fn: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      fn();
    };
    const onData = (stream: Stream) => (chunk: string) => {
      text[stream] = (text[stream] + chunk).slice(-KEEP_CHARS);
      if (done) return;
      partial[stream] += chunk;
      for (let nl = partial[stream].indexOf("\n"); nl >= 0 && !done; nl = partial[stream].indexOf("\n")) {
        const line = partial[stream].slice(0, nl);
        partial[stream] = partial[stream].slice(nl + 1);
        try {
          const value = recognise(line, stream);
          if (value !== undefined) settle(() => resolve(value));
        } catch (err) {
          settle(() => reject(new Error(`${label}: bad ready line ${JSON.stringify(line)}: ${err}`)));
        }
      }
    };
    child.stdout?.setEncoding("utf8").on("data", onData("stdout"));
    child.stderr?.setEncoding("utf8").on("data", onData("stderr"));
    const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
    const timer = setTimeout(
      () => settle(() => reject(new Error(`${label} not ready within ${readyTimeoutMs} ms\n${logTail()}`))),
      readyTimeoutMs,
    );
    void exited.then(({ code, signal }) =>
      settle(() =>
        reject(new Error(`${label} exited with ${signal ?? code} before it was ready\n${logTail()}`)),
      ),
    );
  });

  const running = () => child.exitCode === null && child.signalCode === null;
  // A grandchild may outlive the leader: kill and stop end with the whole group gone.
  const kill = async () => {
    killGroup(pid, "SIGKILL");
    const exit = await exited;
    live.delete(pid);
    return exit;
  };
  const stop = async (graceMs = 10_000) => {
    if (running()) child.kill("SIGTERM");
    const timer = setTimeout(() => killGroup(pid, "SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
    return kill();
  };

  let readyValue: T;
  try {
    readyValue = await ready;
  } catch (err) {
    await kill();
    throw err;
  }
  return {
    label,
    child,
    pid,
    ready: readyValue,
    exited,
    running,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    logTail,
    signal(signal) {
      if (running()) child.kill(signal);
    },
    async waitExit(timeoutMs = 30_000) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), timeoutMs);
      });
      const first = await Promise.race([exited, timedOut]);
      clearTimeout(timer);
      if (first === "timeout") throw new Error(`${label} did not exit within ${timeoutMs} ms\n${logTail()}`);
      return first;
    },
    kill,
    stop,
    [Symbol.asyncDispose]: async () => {
      await stop();
    },
  };
}

export interface RunResult {
  /** Exit code; null when a signal ended the process. */
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  /** With `cleanEnv` the child sees only PATH, HOME and `env`. */
  cleanEnv?: boolean;
  /** Written to stdin, which is then closed (default: empty). */
  input?: string;
  cwd?: string;
}

/** Runs a short `fred <args>` command to completion and collects its output (never throws on exit codes). */
export function runFred(args: string[], options: RunOptions = {}): Promise<RunResult> {
  const base = options.cleanEnv
    ? { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" }
    : process.env;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FRED_BIN, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...base, ...options.env },
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
    child.stdin.end(options.input ?? "");
  });
}
