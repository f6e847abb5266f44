import type Docker from "dockerode";
import { boundedLine, type LogEvent } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { engineMessage } from "./engine.ts";
import { isFrameHeader } from "./logs.ts";
import { LABEL } from "./names.ts";
import type { ContainerRow } from "./observe.ts";

/**
 * The Docker backend's streaming log read: one engine log stream per container of the
 * lease (`follow`, `timestamps`, both streams), demultiplexed as the tail read does, merged
 * into one sequence of events. A container whose stream ends (it stopped: a restart, an
 * update, a death) makes the lease's containers be listed again at once (then every
 * `RELIST_MS` until something changes); a new container for an instance that had another
 * one is announced with an instance event (`restarted` for the same release, `replaced`
 * for another) and followed from its start. Merged events wait in a queue of at most
 * `MAX_QUEUED`; past it the engine streams are paused until the reader catches up.
 */
const RELIST_MS = 5_000;
const RELIST_AFTER_END_MS = 250;
const MAX_QUEUED = 1_000;
/** Lines of a replacement container read from its start (it is new: this is all of it). */
const NEW_CONTAINER_TAIL = 1_000;

export interface DockerFollowDeps {
  docker: Docker;
  clock: Clock;
  log: Logger;
  list: (signal: AbortSignal) => Promise<ContainerRow[]>;
}

interface Followed {
  id: string;
  release: string;
}

export async function* followContainerLogs(
  deps: DockerFollowDeps,
  leaseUuid: string,
  tail: number,
  signal: AbortSignal,
): AsyncGenerator<LogEvent> {
  const queue: LogEvent[] = [];
  const streams = new Set<NodeJS.ReadableStream>();
  let wake: (() => void) | undefined;
  let relistSoon = false;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const push = (event: LogEvent) => {
    queue.push(event);
    if (queue.length >= MAX_QUEUED) for (const s of streams) s.pause();
    notify();
  };
  const known = new Map<string, Followed>();
  let firstPass = true;

  const attach = async (row: ContainerRow, key: string, service: string, index: number, lines: number) => {
    const stream = (await deps.docker.getContainer(row.Id).logs({
      follow: true,
      stdout: true,
      stderr: true,
      timestamps: true,
      tail: lines,
      abortSignal: signal,
    } as Docker.ContainerLogsOptions & { follow: true })) as unknown as NodeJS.ReadableStream;
    streams.add(stream);
    const demux = new LogDemuxer((which, text) => {
      const space = text.indexOf(" ");
      const ts = space > 0 ? text.slice(0, space) : new Date(deps.clock.now()).toISOString();
      const line = space > 0 ? text.slice(space + 1) : text;
      push({ service, instance: index, ts, stream: which, line: boundedLine(line) });
    });
    stream.on("data", (chunk: Buffer) => demux.write(chunk));
    const ended = () => {
      streams.delete(stream);
      if (known.get(key)?.id === row.Id) {
        relistSoon = true;
        notify();
      }
    };
    stream.once("end", ended);
    stream.once("close", ended);
    stream.once("error", ended);
  };

  const relist = async () => {
    const rows = await deps.list(signal);
    for (const row of rows.sort((a, b) => a.Created - b.Created)) {
      const service = row.Labels?.[LABEL.serviceName] ?? "";
      const index = Number(row.Labels?.[LABEL.instanceIndex] ?? 0);
      const key = `${service}/${index}`;
      const release = row.Labels?.[LABEL.release] ?? "";
      const before = known.get(key);
      if (before?.id === row.Id) continue;
      // An older container than the one followed (a rolled-back update's leftovers) is skipped.
      if (before !== undefined && rows.find((r) => r.Id === before.id && r.Created > row.Created)) continue;
      known.set(key, { id: row.Id, release });
      if (!firstPass) {
        const event =
          before === undefined ? "started" : before.release === release ? "restarted" : "replaced";
        push({
          type: "instance",
          service,
          instance: index,
          event,
          ts: new Date(deps.clock.now()).toISOString(),
        });
      }
      try {
        await attach(row, key, service, index, firstPass ? tail : NEW_CONTAINER_TAIL);
      } catch (err) {
        deps.log.warn(
          { lease_uuid: leaseUuid, key, err: engineMessage(err) },
          "container log stream unavailable",
        );
      }
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
        if (queue.length < MAX_QUEUED / 2) for (const s of streams) s.resume();
        yield event;
        continue;
      }
      if (relistSoon) {
        relistSoon = false;
        const before = [...known.values()].map((k) => k.id).join();
        await relist().catch((err: unknown) =>
          deps.log.warn(
            { lease_uuid: leaseUuid, err: engineMessage(err) },
            "log follow: listing containers failed",
          ),
        );
        const changed = [...known.values()].map((k) => k.id).join() !== before;
        // A stream ended without a replacement yet: look again soon, then at the slow pace.
        scheduleRelist(changed || streams.size === known.size ? RELIST_MS : RELIST_AFTER_END_MS);
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
    for (const s of streams) (s as unknown as { destroy?: () => void }).destroy?.();
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
