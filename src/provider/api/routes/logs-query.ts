import type { FastifyRequest } from "fastify";
import { ApiError } from "../errors.ts";
import { DEFAULT_TAIL, logsQuerySchema } from "../schemas/lease.ts";

/** The query of `GET …/logs`, shared by the tail read (logs.ts) and the stream (log-follow.ts). */
export function parseTail(req: FastifyRequest): number {
  const query = logsQuerySchema.safeParse(req.query ?? {});
  if (!query.success) {
    throw new ApiError("ERR_API_BAD_TAIL", 400, query.error.issues[0]?.message ?? "invalid tail");
  }
  const tail = query.data.tail;
  return tail === undefined || tail === "" ? DEFAULT_TAIL : Number(tail);
}

export const FOLLOW_NEEDS_UPGRADE =
  "follow=true needs a WebSocket upgrade (use a WebSocket client); without follow, GET answers the last tail lines";

/** `follow`: absent or "false" reads the tail, "true" streams; anything else is refused. */
export function followMode(req: FastifyRequest): "follow" | "tail" {
  const raw = (req.query as Record<string, unknown> | undefined)?.follow;
  if (raw === undefined || raw === "false") return "tail";
  if (raw === "true") return "follow";
  throw new ApiError("ERR_API_BAD_QUERY", 400, "follow must be true or false");
}
