import { once } from "node:events";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { LOG_STREAM, type LogStreamEvent, QUERY, STORAGE_HEADER } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { notFound, unsupported } from "./errors.ts";
import type { Substrate } from "./substrate.ts";

/**
 * `GET /logs/{uuid}?follow=true&tail=N`: the streaming log read (see
 * src/core/backend-contract/log-stream.ts). The substrate's `followLogs` yields the
 * events; this writes them as NDJSON with backpressure (the next event is pulled only
 * once the socket took the last one, so a slow reader slows the substrate's read and
 * nothing queues here), adds a keepalive when the stream was quiet for
 * `LOG_STREAM.keepaliveMs`, and ends with an `end` event once the lease is no longer in
 * the journal (deprovisioned) or the substrate says its workload is gone. A client that
 * leaves, or the server's shutdown, aborts the substrate's read.
 */
export interface LogFollowOptions {
  substrate: Substrate;
  /** Whether the journal still holds the lease (checked every `checkMs`). */
  leaseExists: (leaseUuid: string) => boolean;
  storageId: string;
  clock: Clock;
  logger: Logger;
  /** How often the lease's presence is checked (default 1 s). */
  checkMs?: number;
}

/** Whether a logs request asks for the stream; anything but "true" or absent is refused (400). */
export function followRequested(req: FastifyRequest): "follow" | "tail" | "bad" {
  const raw = (req.query as Record<string, unknown>)[QUERY.follow];
  if (raw === undefined || raw === "false") return "tail";
  return raw === "true" ? "follow" : "bad";
}

export class LogFollows {
  readonly #o: LogFollowOptions;
  readonly #active = new Set<AbortController>();

  constructor(app: FastifyInstance, o: LogFollowOptions) {
    this.#o = o;
    // Open streams would hold the server's close forever: they end first.
    app.addHook("preClose", async () => {
      for (const ctl of this.#active) ctl.abort(new Error("server shutting down"));
    });
  }

  get open(): number {
    return this.#active.size;
  }

  /** Serves one stream; refusals (501, 404) are thrown before anything is written. */
  async serve(req: FastifyRequest, reply: FastifyReply, leaseUuid: string, tail: number): Promise<void> {
    const { substrate, clock } = this.#o;
    const follow = substrate.followLogs?.bind(substrate);
    if (follow === undefined) throw unsupported("log follow");
    if (!this.#o.leaseExists(leaseUuid)) throw notFound();
    const log = this.#o.logger.child({ lease_uuid: leaseUuid });
    const ctl = new AbortController();
    this.#active.add(ctl);
    const raw = reply.raw;
    reply.hijack();
    raw.writeHead(200, {
      "content-type": LOG_STREAM.contentType,
      "cache-control": "no-store",
      [STORAGE_HEADER]: this.#o.storageId,
    });
    raw.flushHeaders();
    raw.once("close", () => ctl.abort(new Error("client went away")));
    req.raw.socket.setTimeout(0);

    let lastWrite = clock.now();
    let ended = false;
    const send = async (event: LogStreamEvent): Promise<void> => {
      lastWrite = clock.now();
      if (!raw.write(`${JSON.stringify(event)}\n`)) await once(raw, "drain", { signal: ctl.signal });
    };
    const checkMs = this.#o.checkMs ?? 1_000;
    let cancelTick = () => {};
    const tick = () => {
      if (!this.#o.leaseExists(leaseUuid)) {
        ended = true;
        ctl.abort(new Error("lease ended"));
        return;
      }
      // Only when the socket has room: a keepalive never queues behind a stalled reader.
      if (clock.now() - lastWrite >= LOG_STREAM.keepaliveMs && raw.writableNeedDrain === false) {
        lastWrite = clock.now();
        raw.write(`${JSON.stringify({ type: "keepalive" } satisfies LogStreamEvent)}\n`);
      }
      cancelTick = clock.setTimer(checkMs, tick);
    };
    cancelTick = clock.setTimer(checkMs, tick);
    try {
      for await (const event of follow(leaseUuid, tail, ctl.signal)) {
        if (ctl.signal.aborted) break;
        await send(event);
      }
      // The substrate ran out of containers to follow: the workload is gone.
      if (!ctl.signal.aborted) ended = true;
    } catch (err) {
      if (!ctl.signal.aborted) log.warn({ err }, "log follow failed");
    } finally {
      cancelTick();
      this.#active.delete(ctl);
    }
    if (ended && !raw.destroyed) {
      raw.end(`${JSON.stringify({ type: "end", reason: "lease_ended" } satisfies LogStreamEvent)}\n`);
    } else {
      // Interrupted (shutdown, a failed read): no end event, so the reader knows it is cut short.
      raw.destroy();
    }
  }
}
