import type Docker from "dockerode";
import { retry, sleepOrAbort } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { engineMessage } from "./engine.ts";
import { LABEL } from "./names.ts";

/**
 * Follows the engine's event stream for our containers and reports deaths. The stream is
 * a hint, not the truth: on every (re)connection, including after the engine itself
 * restarted, `onResync` re-inventories, so a death that happened while we were not
 * listening is still reported. Reconnects back off from 250 ms to 5 s on the clock.
 */

export interface ContainerDeath {
  containerId: string;
  labels: Record<string, string>;
  exitCode: number | undefined;
}

export type SupervisorState = "idle" | "connecting" | "following" | "waiting" | "stopped";

const BACKOFF_START_MS = 250;
const BACKOFF_MAX_MS = 5_000;

export class EventSupervisor {
  readonly #docker: Docker;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #storageId: string;
  readonly #onDeath: (death: ContainerDeath) => void;
  readonly #onResync: () => Promise<void>;
  readonly #abort = new AbortController();
  #state: SupervisorState = "idle";
  #loop: Promise<void> | undefined;
  #stream: NodeJS.ReadableStream | undefined;
  /** Completed connections; tests and metrics read it to know a resync happened. */
  connections = 0;

  constructor(opts: {
    docker: Docker;
    clock: Clock;
    log: Logger;
    storageId: string;
    onDeath: (death: ContainerDeath) => void;
    onResync: () => Promise<void>;
  }) {
    this.#docker = opts.docker;
    this.#clock = opts.clock;
    this.#log = opts.log;
    this.#storageId = opts.storageId;
    this.#onDeath = opts.onDeath;
    this.#onResync = opts.onResync;
  }

  get state(): SupervisorState {
    return this.#state;
  }

  start(): void {
    if (this.#loop !== undefined) return;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#abort.abort(new Error("supervisor stopped"));
    (this.#stream as { destroy?: () => void } | undefined)?.destroy?.();
    await this.#loop;
    this.#state = "stopped";
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      // Only an abort ends the retry: the engine may stay away for as long as it likes.
      const stream = await retry(() => this.#connect(signal), {
        clock: this.#clock,
        backoff: { initialMs: BACKOFF_START_MS, maxMs: BACKOFF_MAX_MS },
        signal,
        retryable: () => true,
        onRetry: (err, _attempt, delayMs) => {
          this.#state = "waiting";
          this.#log.warn({ err: engineMessage(err), retry_ms: delayMs }, "docker event stream unavailable");
        },
      }).catch(() => undefined);
      if (stream === undefined) break;
      this.#stream = stream;
      const ended = this.#consume(stream);
      this.#state = "following";
      this.connections++;
      await this.#onResync().catch((err) =>
        this.#log.warn({ err: engineMessage(err) }, "resync after engine connection failed"),
      );
      await ended;
      if (signal.aborted) break;
      this.#log.warn("docker event stream ended; reconnecting");
      // A stream that ends at once must not turn this into a busy loop.
      this.#state = "waiting";
      await sleepOrAbort(this.#clock, BACKOFF_START_MS, signal).catch(() => {});
    }
  }

  #connect(signal: AbortSignal): Promise<NodeJS.ReadableStream> {
    this.#state = "connecting";
    return this.#docker.getEvents({
      filters: JSON.stringify({
        type: ["container"],
        event: ["die"],
        label: [`${LABEL.managed}=true`, `${LABEL.storageId}=${this.#storageId}`],
      }),
      abortSignal: signal,
    } as Docker.GetEventsOptions) as Promise<NodeJS.ReadableStream>;
  }

  #consume(stream: NodeJS.ReadableStream): Promise<void> {
    return new Promise((resolve) => {
      let buffer = "";
      stream.on("data", (chunk: Buffer | string) => {
        buffer += chunk.toString();
        for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (line !== "") this.#handle(line);
        }
      });
      stream.on("end", () => resolve());
      stream.on("close", () => resolve());
      stream.on("error", () => resolve());
    });
  }

  #handle(line: string): void {
    let event: { Action?: string; Actor?: { ID?: string; Attributes?: Record<string, string> } };
    try {
      event = JSON.parse(line);
    } catch {
      this.#log.warn("unparsable docker event skipped");
      return;
    }
    if (event.Action !== "die" || !event.Actor?.ID) return;
    const labels = event.Actor.Attributes ?? {};
    if (labels[LABEL.storageId] !== this.#storageId) return;
    const code = labels.exitCode === undefined ? undefined : Number(labels.exitCode);
    this.#onDeath({
      containerId: event.Actor.ID,
      labels,
      exitCode: Number.isFinite(code) ? code : undefined,
    });
  }
}
