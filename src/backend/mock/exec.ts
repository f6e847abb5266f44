import { once } from "node:events";
import { PassThrough } from "node:stream";
import { setImmediate, setTimeout as sleep } from "node:timers/promises";
import type { TerminalSize } from "../../core/exec-channel.ts";
import type { ExecRequest, ExecSession } from "../kit/index.ts";

/**
 * The mock backend's shell: a tiny built-in command set so shell sessions can be tested
 * without Docker. Commands: `echo ARGS` (`>&2` as the last word writes to stderr), `cat`
 * (stdin to stdout until stdin closes), `sleep N`, `exit N`, `yes` (endless "y" lines, at
 * the reader's pace), `stty size` ("rows cols" of the last resize), `stty resizes` (how many arrived), and `sh -c 'A; B'`.
 * `sh` (or /bin/sh) without -c reads commands from stdin line by line; with a TTY it
 * prints a "$ " prompt first. Anything else exits 127 with "NAME: not found" on stderr.
 */
export function mockExec(req: ExecRequest, live: Set<ExecSession>): ExecSession {
  const stdin = new PassThrough();
  const stdout = new PassThrough({ highWaterMark: 16 * 1024 });
  const stderr = req.tty ? undefined : new PassThrough({ highWaterMark: 16 * 1024 });
  const killed = new AbortController();
  let size: TerminalSize | undefined;
  let resizes = 0;

  const write = async (stream: PassThrough, text: string) => {
    if (killed.signal.aborted) return;
    if (!stream.write(text)) {
      await Promise.race([once(stream, "drain"), once(killed.signal, "abort")]);
    }
  };
  const err = (text: string) => write(stderr ?? stdout, text);

  /** Runs one command line; returns its exit code and whether the shell must stop. */
  async function run(words: string[]): Promise<{ code: number; stop?: boolean }> {
    const [name, ...args] = words;
    switch (name) {
      case undefined:
        return { code: 0 };
      case "echo": {
        const toErr = args.at(-1) === ">&2";
        const text = `${(toErr ? args.slice(0, -1) : args).join(" ")}\n`;
        await (toErr ? err(text) : write(stdout, text));
        return { code: 0 };
      }
      case "exit": {
        const code = Number(args[0] ?? 0);
        return { code: Number.isInteger(code) ? code & 255 : 2, stop: true };
      }
      case "sleep":
        await sleep(Number(args[0] ?? 0) * 1000, undefined, { signal: killed.signal }).catch(() => {});
        return { code: 0 };
      case "cat":
        for await (const chunk of stdin) await write(stdout, String(chunk));
        return { code: 0 };
      case "yes":
        while (!killed.signal.aborted) {
          await write(stdout, "y\n".repeat(512));
          // A write the buffer took at once resolves in a microtask: yield, or nothing else runs.
          await setImmediate();
        }
        return { code: 0 };
      case "stty":
        if (args[0] === "size") {
          await write(stdout, size === undefined ? "0 0\n" : `${size.height} ${size.width}\n`);
          return { code: 0 };
        }
        // Ours: how many resize frames reached the command (resize storms must be coalesced).
        if (args[0] === "resizes") {
          await write(stdout, `${resizes}\n`);
          return { code: 0 };
        }
        break;
      case "sh":
      case "/bin/sh":
        if (args[0] === "-c") return script(args[1] ?? "");
        if (args.length === 0) return interactive();
        break;
    }
    await err(`${name}: not found\n`);
    return { code: 127 };
  }

  async function script(text: string): Promise<{ code: number; stop?: boolean }> {
    let code = 0;
    for (const part of text.split(/[;\n]/)) {
      const r = await run(splitWords(part));
      code = r.code;
      if (r.stop || killed.signal.aborted) return { code, stop: true };
    }
    return { code };
  }

  async function interactive(): Promise<{ code: number }> {
    let code = 0;
    let pending = "";
    if (req.tty) await write(stdout, "$ ");
    for await (const chunk of stdin) {
      const text = String(chunk);
      // Ctrl-D (a terminal's end of input) ends the shell, as it does at a real prompt.
      if (req.tty && text.includes("\x04")) return { code };
      pending += text.replace(/\r/g, "\n");
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        const r = await script(line);
        code = r.code;
        if (r.stop || killed.signal.aborted) return { code };
        if (req.tty) await write(stdout, "$ ");
      }
    }
    return { code };
  }

  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const exit = async (self: ExecSession): Promise<number> => {
    try {
      const { code } = await run([...req.argv]);
      return killed.signal.aborted ? 137 : code;
    } catch {
      // stdin destroyed under a reading command: the session was killed.
      return 137;
    } finally {
      stdout.end();
      stderr?.end();
      live.delete(self);
      done();
    }
  };
  let start: (self: ExecSession) => void = () => {};
  const session: ExecSession = {
    stdin,
    stdout,
    stderr,
    resize: (s) => {
      size = s;
      resizes++;
    },
    exit: new Promise<ExecSession>((resolve) => {
      start = resolve;
    }).then(exit),
    kill: async () => {
      killed.abort();
      stdin.destroy();
      stdout.resume();
      stderr?.resume();
      await finished;
    },
  };
  live.add(session);
  start(session);
  return session;
}

/** Words of a command line: whitespace-separated, with '…' and "…" quoting. */
export function splitWords(line: string): string[] {
  const words: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) words.push(m[1] ?? m[2] ?? m[3] ?? "");
  return words;
}
