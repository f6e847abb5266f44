import type { FastifyInstance } from "fastify";
import { decodeBase64Std, parseStrictJson } from "../../../core/encoding.ts";
import { parseManifest } from "../../../core/manifest/index.ts";
import type { TenantContext } from "../context.ts";
import { maintenanceRefusal } from "../maintenance-answers.ts";
import { readBody } from "./data.ts";
import { registerMaintenanceRoute } from "./maintenance.ts";

/**
 * `POST /v1/leases/{uuid}/update` (access token, replay-protected, Idempotency-Key), body
 * `{"payload": "<standard base64 manifest>"}`: the new manifest is journaled as the lease's
 * pending desired state and sent to its backend; it becomes the lease's payload only when
 * the backend reports this exact update succeeded. The body is read whatever its content
 * type (up to max_request_body_size) and checked before the token is spent: not a JSON
 * object, a `payload` that is not a string or not canonical base64 ("invalid request
 * body"), none or empty ("payload is required": the reference's texts), or not a valid
 * manifest is a 400.
 */
const INVALID_BODY = "invalid request body";
const PAYLOAD_REQUIRED = "payload is required";

export function registerUpdateRoute(app: FastifyInstance, ctx: TenantContext): void {
  const max = ctx.deps.config.maxRequestBodySize;
  registerMaintenanceRoute(app, ctx, {
    kind: "update",
    read: (req, scope) => readBody(req.raw, max, scope.signal),
    check: (body) => checkUpdateBody(body, max),
  });
}

export function checkUpdateBody(body: Buffer, max: number): Buffer {
  const bad = maintenanceRefusal.badUpdate;
  let parsed: unknown;
  try {
    parsed = parseStrictJson(body, max);
  } catch {
    throw bad(INVALID_BODY);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw bad(INVALID_BODY);
  const text = (parsed as { payload?: unknown }).payload;
  if (text === undefined || text === null || text === "") throw bad(PAYLOAD_REQUIRED);
  if (typeof text !== "string") throw bad(INVALID_BODY);
  let payload: Buffer;
  try {
    payload = decodeBase64Std(text, "payload", max);
  } catch {
    throw bad(INVALID_BODY);
  }
  if (payload.length === 0) throw bad(PAYLOAD_REQUIRED);
  const manifest = parseManifest(payload);
  if (!manifest.ok) {
    const first = manifest.problems[0];
    throw bad(first === undefined ? "invalid manifest" : `invalid manifest: ${first.path} ${first.message}`);
  }
  return payload;
}
