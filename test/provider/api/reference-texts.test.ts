import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { FastifyRequest } from "fastify";
import { ApiError, refuse } from "../../../src/provider/api/errors.ts";
import { asApiError, maintenanceRefusal } from "../../../src/provider/api/maintenance-answers.ts";
import { parseTail } from "../../../src/provider/api/routes/logs.ts";
import { restoreRefusal } from "../../../src/provider/api/routes/restore.ts";
import { checkUpdateBody } from "../../../src/provider/api/routes/update.ts";
import { ANSWERS } from "../../../src/provider/maintenance/completion.ts";
import { backendRefusalAnswer } from "../../../src/provider/maintenance/refusal.ts";

/**
 * The tenant-facing `error` texts whose condition is also the reference's (Fred v0.13,
 * internal/api/handlers.go and payload.go): tenant tools match on these words, so each is
 * pinned here, with its status and our `reason` beside it. The HTTP tests of each route
 * (tenant-api, service, refusals, restore-route) show the same answers on the wire.
 */
type Pinned = [condition: string, make: () => unknown, status: number, error: string, reason?: string];

const thrown = (fn: () => unknown): unknown => {
  try {
    return fn();
  } catch (err) {
    return err;
  }
};
const body = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v));
const update = (v: unknown) => () => thrown(() => checkUpdateBody(body(v), 1 << 20));
const tail = (t: string) => () =>
  thrown(() => parseTail({ query: { tail: t } } as unknown as FastifyRequest));
const refused =
  (status: number, kind: "restart" | "update", error = "") =>
  () => {
    const { answer } = backendRefusalAnswer({ kind: "refused", status, error }, kind);
    return new ApiError("ERR_API_MAINTENANCE_REFUSED", answer.status, answer.error ?? "", {
      ...(answer.reason === undefined ? {} : { reason: answer.reason }),
    });
  };
const restoreRefused =
  (status: number, error = "", code?: string) =>
  () =>
    restoreRefusal({ kind: "refused", status, error, ...(code === undefined ? {} : { code }) });

const TABLE: Pinned[] = [
  ["lease UUID not canonical", refuse.badLeaseUuid, 400, "invalid lease UUID format"],
  ["token missing, invalid, replayed or for another lease", () => refuse.unauthorized(), 401, "unauthorized"],
  ["lease of another tenant or provider", refuse.forbidden, 403, "forbidden"],
  ["no such lease on chain", () => refuse.leaseNotFound(), 404, "lease not found"],
  ["not provisioned on its backend", () => refuse.notProvisioned(), 404, "lease not yet provisioned"],
  ["chain read failed", () => refuse.chainRead(new Error("x")), 500, "internal server error"],
  ["backend read failed", () => refuse.backendRead(new Error("x")), 500, "internal server error"],
  [
    "temporarily unavailable",
    () => refuse.unavailable("ERR_API_REPLAY_STORE"),
    503,
    "service temporarily unavailable",
  ],
  ["request deadline passed", refuse.timeout, 503, "request timeout"],
  ["logs tail not a positive integer", tail("0"), 400, "tail must be a positive integer"],
  ["logs tail above 10000", tail("10001"), 400, "tail must not exceed 10000"],
  // Restart and update.
  [
    "restart while another command runs",
    () => maintenanceRefusal.busy("restart"),
    409,
    "invalid state for restart",
    "command_in_progress",
  ],
  [
    "update while another command runs",
    () => maintenanceRefusal.busy("update"),
    409,
    "invalid state for update",
    "command_in_progress",
  ],
  [
    "backend: a state that cannot be restarted",
    refused(409, "restart"),
    409,
    "invalid state for restart",
    "backend_invalid_state",
  ],
  [
    "backend: a state that cannot be updated",
    refused(409, "update"),
    409,
    "invalid state for update",
    "backend_invalid_state",
  ],
  ["backend: restart of a lease not provisioned", refused(404, "restart"), 404, "lease not yet provisioned"],
  ["backend: update of a lease not provisioned", refused(404, "update"), 404, "lease not yet provisioned"],
  [
    "backend: update refused as invalid, no detail",
    refused(400, "update"),
    400,
    "the update request was rejected as invalid",
  ],
  [
    "lease not ACTIVE",
    maintenanceRefusal.notActive,
    409,
    "lease not found or not active",
    "lease_not_active",
  ],
  [
    "a pending command whose lease ended before it ran (the stored answer its retries replay)",
    () => asApiError(ANSWERS.ended),
    409,
    "lease not found or not active",
    "lease_not_active",
  ],
  ["update body not JSON", update("{nope"), 400, "invalid request body"],
  ["update body not an object", update([]), 400, "invalid request body"],
  ["update payload not a string", update({ payload: 5 }), 400, "invalid request body"],
  ["update payload not base64", update({ payload: "@@@" }), 400, "invalid request body"],
  ["update payload missing", update({}), 400, "payload is required"],
  ["update payload empty", update({ payload: "" }), 400, "payload is required"],
  // Restore.
  [
    "restore: lifecycle work on the source",
    () => restoreRefusal({ kind: "source_busy" }),
    409,
    "lease is already being provisioned or restored",
    "source_busy",
  ],
  [
    "restore: lifecycle work on the target",
    () => restoreRefusal({ kind: "target_busy" }),
    409,
    "lease is already being provisioned or restored",
    "target_busy",
  ],
  [
    "restore: target not PENDING",
    () => restoreRefusal({ kind: "target_not_pending" }),
    409,
    "lease is not pending; only a fresh lease can be restored into",
    "target_not_pending",
  ],
  [
    "restore: no retained data here",
    () => restoreRefusal({ kind: "source_not_found" }),
    404,
    "no retained data found for that lease",
  ],
  [
    "restore: the backend holds no retained data",
    restoreRefused(422),
    404,
    "no retained data found for that lease",
  ],
  ["restore: not in a restorable state", restoreRefused(409), 409, "lease not in a restorable state"],
  [
    "restore: no capacity",
    restoreRefused(503, "", "insufficient_resources"),
    503,
    "insufficient resources to restore",
  ],
  [
    "restore: refused as invalid, no detail",
    restoreRefused(400),
    400,
    "the restore request was rejected as invalid",
  ],
  [
    "restore: a demote that does not fit",
    restoreRefused(422, "", "demote_exceeds_tier"),
    422,
    "retained data exceeds the requested smaller tier: ",
  ],
  [
    "restore: an off-contract error body",
    () => restoreRefusal({ kind: "ambiguous", malformed: true, detail: "html" }),
    502,
    "the provider backend returned an unusable error; the request was not applied",
  ],
  [
    "restore: ambiguous answer",
    () => restoreRefusal({ kind: "ambiguous", malformed: false, detail: "5xx" }),
    500,
    "internal server error",
  ],
];

describe("tenant error texts: the reference's words where the condition is the reference's", () => {
  for (const [condition, make, status, error, reason] of TABLE) {
    it(`${condition} → ${status} ${JSON.stringify(error)}${reason === undefined ? "" : ` (${reason})`}`, () => {
      const err = make();
      assert.ok(err instanceof ApiError, `${condition}: ${String(err)}`);
      assert.deepEqual(
        { status: err.status, error: err.publicMessage, reason: err.reason },
        { status, error, reason },
      );
    });
  }
});
