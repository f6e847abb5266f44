import type { FastifyRequest } from "fastify";
import { ApiError } from "./errors.ts";
import { type ExtraKey, includeQuerySchema } from "./schemas/lease.ts";

/**
 * `?include=` of GET status and GET provision: which of our extra keys the tenant asked
 * for (none by default, so the answer has exactly the reference's keys). A value that is
 * not one of them, repeated, or a repeated parameter is 400.
 */
export function parseInclude(req: FastifyRequest): ReadonlySet<ExtraKey> {
  const query = includeQuerySchema.safeParse(req.query ?? {});
  if (!query.success) {
    throw new ApiError("ERR_API_BAD_QUERY", 400, query.error.issues[0]?.message ?? "invalid query");
  }
  return query.data.include ?? new Set();
}
