import { readdir, readFile } from "node:fs/promises";
import type { Duplex } from "node:stream";
import { PassThrough, Writable } from "node:stream";
import type Docker from "dockerode";
import type { Logger } from "../../log.ts";
import { type ExecRequest, type ExecSession, ExecTargetMissing } from "../kit/index.ts";
import { instanceName } from "./names.ts";

/**
 * A shell session in a lease's container through the engine's exec API: the command runs
 * as the container's own user (no `User` override), inside its namespaces and cgroup, so
 * it has exactly the container's limits and reaches nothing of the host.
 *
 * Ending it: the engine has no "kill exec" call, and closing the attach stream does not
 * stop a command that ignores its stdin (`sleep 1000`). `kill` therefore reads the exec's
 * host PID from the engine (ExecInspect.Pid), checks through /proc that the PID still
 * belongs to this container's cgroup (a reused PID is never touched), and SIGKILLs it and
 * every descendant. That needs the backend in the host's PID namespace, which is how it
 * runs (deploy/systemd); a wrapper inside the image would need a binary we cannot assume
 * the image has, and a second exec of `kill` would need the PID in the container's
 * namespace, which again only /proc on the host tells.
 */
export async function dockerExec(
  docker: Docker,
  leaseUuid: string,
  req: ExecRequest,
  signal: AbortSignal,
  log: Logger,
): Promise<ExecSession> {
  const container = docker.getContainer(instanceName(leaseUuid, req.service, req.instance));
  let info: Docker.ContainerInspectInfo;
  try {
    info = await container.inspect({ abortSignal: signal });
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) throw new ExecTargetMissing();
    throw err;
  }
  if (!info.State.Running) throw new ExecTargetMissing("the instance is not running");
  const exec = await container.exec({
    Cmd: [...req.argv],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: req.tty,
    abortSignal: signal,
  } as Docker.ExecCreateOptions);
  const stream = (await exec.start({ hijack: true, stdin: true, Tty: req.tty })) as Duplex;

  const stdout = new PassThrough({ highWaterMark: 64 * 1024 });
  const stderr = req.tty ? undefined : new PassThrough({ highWaterMark: 64 * 1024 });
  if (req.tty) stream.pipe(stdout);
  else demux(stream, stdout, stderr as PassThrough);
  stream.on("error", () => {});

  const stdin = new Writable({
    write: (chunk: Buffer, _enc, cb) => {
      if (stream.writable) stream.write(chunk, () => cb());
      else cb();
    },
    // Half-close: the engine's hijacked connection takes a FIN as "stdin closed".
    final: (cb) => {
      stream.end();
      cb();
    },
  });

  const ended = new Promise<void>((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
  });
  let killed: Promise<void> | undefined;
  return {
    stdin,
    stdout,
    stderr,
    resize: (size) => {
      if (!req.tty) return;
      exec.resize({ h: size.height, w: size.width }).catch(() => {});
    },
    exit: ended.then(async () => {
      stdout.end();
      stderr?.end();
      const state = await exec.inspect();
      return state.ExitCode ?? 137;
    }),
    kill: () => {
      killed ??= (async () => {
        stream.destroy();
        const state = await exec.inspect().catch(() => undefined);
        if (state?.Running !== true || !state.Pid) return;
        await killTree(state.Pid, info.Id, log);
        // The engine notices the process is gone on its own; wait for that, briefly.
        for (let i = 0; i < 50; i++) {
          if ((await exec.inspect().catch(() => undefined))?.Running !== true) return;
          await new Promise((r) => setTimeout(r, 100));
        }
        log.warn({ lease_uuid: leaseUuid, pid: state.Pid }, "exec process still running after SIGKILL");
      })();
      return killed;
    },
  };
}

/** The engine's multiplexed stream (8-byte headers: stream, 0,0,0, size BE) to two streams, with backpressure. */
function demux(source: Duplex, stdout: PassThrough, stderr: PassThrough): void {
  let pending: Buffer = Buffer.alloc(0);
  source.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let full = false;
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      const target = pending[0] === 2 ? stderr : stdout;
      if (!target.write(pending.subarray(8, 8 + size))) full = true;
      pending = pending.subarray(8 + size);
    }
    if (full) {
      source.pause();
      const resume = () => {
        if (!stdout.writableNeedDrain && !stderr.writableNeedDrain) source.resume();
      };
      stdout.once("drain", resume);
      stderr.once("drain", resume);
    }
  });
  source.once("end", () => {
    stdout.end();
    stderr.end();
  });
}

/** SIGKILLs `pid` and its descendants, if `pid` still belongs to the container's cgroup. */
async function killTree(pid: number, containerId: string, log: Logger): Promise<void> {
  const cgroup = await readFile(`/proc/${pid}/cgroup`, "utf8").catch(() => "");
  if (!cgroup.includes(containerId)) {
    log.warn({ pid }, "exec process not found in the container's cgroup; not killed");
    return;
  }
  const children = new Map<number, number[]>();
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => undefined);
    // Field 4 (ppid) follows the parenthesised command, which may itself hold spaces.
    const ppid = Number(stat?.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (!Number.isInteger(ppid)) continue;
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const tree: number[] = [];
  for (const queue = [pid]; queue.length > 0; ) {
    const next = queue.pop() as number;
    tree.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  for (const p of tree) {
    try {
      process.kill(p, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}
