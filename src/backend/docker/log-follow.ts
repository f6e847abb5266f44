import type Docker from "dockerode";
import { boundedLine, type LogEvent } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { engineMessage } from "./engine.ts";
import { isFrameHeader } from "./logs.ts";
import { instanceName, LABEL } from "./names.ts";
import type { ContainerRow } from "./observe.ts";

/**
 * The Docker backend's streaming log read: one engine log stream per container of the
 * lease (`follow`, `timestamps`, both streams), demultiplexed as the tail read does, merged
 * into one sequence of events. An instance's current container is the one holding the
 * instance's name (a restart or an update creates the next one beside the old one, which
 * steps aside under another name). A container whose stream ends (it stopped: a restart,
 * an update, a death) makes the lease's containers be listed again at once, then every
 * `RELIST_AFTER_END_MS` for `FAST_RELIST_FOR_MS`, then every `RELIST_MS`. A new current
 * container is announced with an instance event (`restarted` for the same release,
 * `replaced` for another) and followed from its start once it runs (a container that was
 * only created has no stream to follow yet); a container followed before is followed again
 * from just after its last line read, so no line comes twice. Merged events wait in a queue
 * of at most `MAX_QUEUED`; past it the engine streams are paused until the reader catches up.
 */
const RELIST_MS = 5_000;
const RELIST_AFTER_END_MS = 250;
const FAST_RELIST_FOR_MS = 15_000;
const MAX_QUEUED = 1_000;
/** Lines of a replacement container read from its start (it is new: this is all of it). */
const NEW_CONTAINER_TAIL = 1_000;
/** Containers whose last read line is remembered (the current ones and those they replaced). */
const MAX_REMEMBERED = 64;

export interface DockerFollowDeps {
  docker: Docker;
  clock: Clock;
  log: Logger;
  list: (signal: AbortSignal) => Promise<ContainerRow[]>;
}

interface Current {
  id: string;
  release: string;
}

/** The engine's `since` just after an RFC 3339 timestamp: "seconds.nanoseconds", plus 1 ns. */
export function sinceAfter(ts: string): string | undefined {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$/.exec(ts);
  const ms = m ? Date.parse(`${m[1]}Z`) : Number.NaN;
  if (!m || Number.isNaN(ms)) return undefined;
  const nanos = BigInt(ms / 1000) * 1_000_000_000n + BigInt((m[2] ?? "").padEnd(9, "0")) + 1n;
  const text = nanos.toString().padStart(10, "0");
  return `${text.slice(0, -9)}.${text.slice(-9)}`;
}

export async function* followContainerLogs(
  deps: DockerFollowDeps,
  leaseUuid: string,
  tail: number,
  signal: AbortSignal,
): AsyncGenerator<LogEvent> {
  const queue: LogEvent[] = [];
  /** The live engine streams, by container id. */
  const streams = new Map<string, NodeJS.ReadableStream>();
  /**
   * Containers read before: the timestamp of the last line read (to resume just after it)
   * and whether their stream ended (a stopped container is then read no more).
   */
  const seen = new Map<string, { lastTs?: string; drained: boolean }>();
  let wake: (() => void) | undefined;
  let relistSoon = false;
  let lastEndAt = Number.NEGATIVE_INFINITY;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const push = (event: LogEvent) => {
    queue.push(event);
    if (queue.length >= MAX_QUEUED) for (const s of streams.values()) s.pause();
    notify();
  };
  const current = new Map<string, Current>();
  let firstPass = true;

  const attach = async (row: ContainerRow, service: string, index: number, lines: number) => {
    const read = seen.get(row.Id) ?? { drained: false };
    seen.set(row.Id, read);
    const since = read.lastTs === undefined ? undefined : sinceAfter(read.lastTs);
    const stream = (await deps.docker.getContainer(row.Id).logs({
      follow: true,
      stdout: true,
      stderr: true,
      timestamps: true,
      ...(since === undefined ? { tail: lines } : { since }),
      abortSignal: signal,
    } as Docker.ContainerLogsOptions & { follow: true })) as unknown as NodeJS.ReadableStream;
    streams.set(row.Id, stream);
    const demux = new LogDemuxer((which, text) => {
      const space = text.indexOf(" ");
      const ts = space > 0 ? text.slice(0, space) : new Date(deps.clock.now()).toISOString();
      const line = space > 0 ? text.slice(space + 1) : text;
      read.lastTs = ts;
      push({ service, instance: index, ts, stream: which, line: boundedLine(line) });
    });
    stream.on("data", (chunk: Buffer) => demux.write(chunk));
    const ended = () => {
      if (streams.get(row.Id) !== stream) return;
      streams.delete(row.Id);
      read.drained = true;
      lastEndAt = deps.clock.now();
      relistSoon = true;
      notify();
    };
    stream.once("end", ended);
    stream.once("close", ended);
    stream.once("error", ended);
  };

  const relist = async () => {
    const rows = await deps.list(signal);
    for (const row of rows) {
      const service = row.Labels?.[LABEL.serviceName] ?? "";
      const index = Number(row.Labels?.[LABEL.instanceIndex] ?? 0);
      // Only the instance's current container: not one set aside by a restart or an update.
      if (!row.Names?.includes(`/${instanceName(leaseUuid, service, index)}`)) continue;
      const key = `${service}/${index}`;
      const release = row.Labels?.[LABEL.release] ?? "";
      const before = current.get(key);
      if (before?.id !== row.Id) {
        current.set(key, { id: row.Id, release });
        if (!firstPass) {
          const event =
            before === undefined ? "started" : before.release === release ? "restarted" : "replaced";
          const ts = new Date(deps.clock.now()).toISOString();
          push({ type: "instance", service, instance: index, event, ts });
        }
      }
      // A stopped container's lines are read once (to where it stopped); one only created
      // has none yet: it is read once it runs.
      const idle = row.State === "created" || (row.State !== "running" && seen.get(row.Id)?.drained);
      if (streams.has(row.Id) || idle) continue;
      try {
        await attach(row, service, index, firstPass ? tail : NEW_CONTAINER_TAIL);
      } catch (err) {
        deps.log.warn(
          { lease_uuid: leaseUuid, key, err: engineMessage(err) },
          "container log stream unavailable",
        );
      }
    }
    // Remember the current containers and a few before them, no more.
    for (const id of [...seen.keys()].slice(0, Math.max(0, seen.size - MAX_REMEMBERED))) {
      if (!streams.has(id) && ![...current.values()].some((c) => c.id === id)) seen.delete(id);
    }
    firstPass = false;
  };

  let cancelRelist = () => {};
  try {
    await relist();
    const scheduleRelist = (ms: number) => {
      cancelRelist();
      cancelRelist = deps.clock.setTimer(ms, () => {
        relistSoon = true;
        notify();
      });
    };
    scheduleRelist(RELIST_MS);
    while (!signal.aborted) {
      const event = queue.shift();
      if (event !== undefined) {
        if (queue.length < MAX_QUEUED / 2) for (const s of streams.values()) s.resume();
        yield event;
        continue;
      }
      if (relistSoon) {
        relistSoon = false;
        await relist().catch((err: unknown) =>
          deps.log.warn(
            { lease_uuid: leaseUuid, err: engineMessage(err) },
            "log follow: listing containers failed",
          ),
        );
        // Soon after a stream ended its replacement is expected: look often, for a while.
        const recent = deps.clock.now() - lastEndAt < FAST_RELIST_FOR_MS;
        scheduleRelist(recent && streams.size < current.size ? RELIST_AFTER_END_MS : RELIST_MS);
        continue;
      }
      const onAbort = () => notify();
      signal.addEventListener("abort", onAbort, { once: true });
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      signal.removeEventListener("abort", onAbort);
    }
  } finally {
    cancelRelist();
    for (const s of streams.values()) (s as unknown as { destroy?: () => void }).destroy?.();
  }
}

/**
 * The engine's multiplexed log stream, decoded as it arrives: each frame's payload goes to
 * its stream's line splitter; a stream that is not framed (a TTY container) is all stdout.
 * At most one partial line per stream is held (cut at 64 KiB).
 */
export class LogDemuxer {
  readonly #onLine: (stream: "stdout" | "stderr", text: string) => void;
  #buffer: Buffer = Buffer.alloc(0);
  #framed: boolean | undefined;
  readonly #partial = { stdout: "", stderr: "" };

  constructor(onLine: (stream: "stdout" | "stderr", text: string) => void) {
    this.#onLine = onLine;
  }

  write(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    if (this.#framed === undefined && this.#buffer.length >= 8) this.#framed = isFrameHeader(this.#buffer, 0);
    if (this.#framed === false) {
      this.#text("stdout", this.#buffer.toString("utf8"));
      this.#buffer = Buffer.alloc(0);
      return;
    }
    let offset = 0;
    while (offset + 8 <= this.#buffer.length) {
      const size = this.#buffer.readUInt32BE(offset + 4);
      if (offset + 8 + size > this.#buffer.length) break;
      const which = this.#buffer[offset] === 2 ? "stderr" : "stdout";
      this.#text(which, this.#buffer.subarray(offset + 8, offset + 8 + size).toString("utf8"));
      offset += 8 + size;
    }
    this.#buffer = this.#buffer.subarray(offset);
  }

  #text(stream: "stdout" | "stderr", text: string): void {
    const lines = (this.#partial[stream] + text).split("\n");
    this.#partial[stream] = (lines.pop() ?? "").slice(-64 * 1024);
    for (const line of lines) this.#onLine(stream, line.endsWith("\r") ? line.slice(0, -1) : line);
  }
}
