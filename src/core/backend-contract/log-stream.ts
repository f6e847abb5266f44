import { z } from "zod";

/**
 * The streaming log read, `GET /logs/{uuid}?follow=true&tail=N`, as both sides see it.
 * A backend answers `200 application/x-ndjson` and keeps the response open: one JSON
 * object per line, in the order the lease's containers wrote them. The tail comes first
 * (`tail` lines per instance), then new lines as they are written. Besides line events a
 * stream carries instance events (an instance's container started, was restarted or was
 * replaced: the lines after it come from the new container), a keepalive every
 * `LOG_STREAM.keepaliveMs` (so a reader can tell a quiet workload from a hung backend),
 * and, last, an end event once the lease's workload is gone (deprovisioned, closed).
 * A stream that stops without an end event was interrupted.
 */
export const LOG_STREAM = {
  contentType: "application/x-ndjson",
  /** A backend writes at least one event this often, a keepalive when nothing else. */
  keepaliveMs: 15_000,
  /** A reader gives up on a stream silent for this long (two keepalives missed). */
  idleMs: 45_000,
  /** Bytes of one log line a backend sends; the rest of a longer line is cut. */
  maxLineBytes: 16 * 1024,
  /** A reader refuses an encoded event longer than this (the line plus its fields). */
  maxEventBytes: 64 * 1024,
} as const;

/** The pinned line frame, as the tenant receives it. */
export interface LogLineEvent {
  service: string;
  /** 0-based instance index within the service. */
  instance: number;
  /** RFC 3339 UTC, from the engine's own timestamp of the line. */
  ts: string;
  stream: "stdout" | "stderr";
  line: string;
}

/**
 * What became of an instance's container: `started` (a container the stream had not seen
 * before, e.g. a new instance), `restarted` (the same release, a new container: a restart),
 * `replaced` (a new release: an update), `stopped` (the container ended; its lines stop).
 */
export type InstanceChange = "started" | "restarted" | "replaced" | "stopped";

export interface LogInstanceEvent {
  type: "instance";
  service: string;
  instance: number;
  event: InstanceChange;
  ts: string;
}

export interface LogKeepaliveEvent {
  type: "keepalive";
}

export interface LogEndEvent {
  type: "end";
  /** Why the stream ended: the lease's workload no longer exists. */
  reason: "lease_ended";
}

/** What a substrate yields (the kit adds keepalives and the end). */
export type LogEvent = LogLineEvent | LogInstanceEvent;
export type LogStreamEvent = LogEvent | LogKeepaliveEvent | LogEndEvent;

const name = z.string().min(1).max(63);
const index = z.int().min(0).max(1000);
const ts = z.string().min(1).max(40);

const lineSchema = z.strictObject({
  service: name,
  instance: index,
  ts,
  stream: z.enum(["stdout", "stderr"]),
  line: z.string(),
});
const instanceSchema = z.strictObject({
  type: z.literal("instance"),
  service: name,
  instance: index,
  event: z.enum(["started", "restarted", "replaced", "stopped"]),
  ts,
});
const keepaliveSchema = z.strictObject({ type: z.literal("keepalive") });
const endSchema = z.strictObject({ type: z.literal("end"), reason: z.literal("lease_ended") });

/** One line of a log stream, or undefined when it is not an event of the contract. */
export function parseLogStreamLine(text: string): LogStreamEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const type = (value as { type?: unknown }).type;
  const schema =
    type === undefined
      ? lineSchema
      : type === "instance"
        ? instanceSchema
        : type === "keepalive"
          ? keepaliveSchema
          : type === "end"
            ? endSchema
            : undefined;
  const parsed = schema?.safeParse(value);
  return parsed?.success ? (parsed.data as LogStreamEvent) : undefined;
}

/** A line cut to `maxLineBytes` (on a character boundary), for a backend to send. */
export function boundedLine(line: string, maxBytes: number = LOG_STREAM.maxLineBytes): string {
  if (line.length <= maxBytes / 4 || Buffer.byteLength(line) <= maxBytes) return line;
  return Buffer.from(line)
    .subarray(0, maxBytes)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
}
