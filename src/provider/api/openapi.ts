import type { FastifyInstance } from "fastify";
import { z } from "zod";
import pkg from "../../../package.json" with { type: "json" };
import {
  connectionBodySchema,
  errorEnvelopeSchema,
  eventFrameSchema,
  eventsQuerySchema,
  includeQuerySchema,
  leaseParamsSchema,
  logsBodySchema,
  logsQuerySchema,
  maintenanceAcceptedSchema,
  provisionBodySchema,
  releasesBodySchema,
  restoreAcceptedSchema,
  restoreBodySchema,
  shellQuerySchema,
  statusBodySchema,
  updateBodySchema,
} from "./schemas/lease.ts";
import { healthReportSchema, workloadsBodySchema, workloadsQuerySchema } from "./schemas/operational.ts";
import { providerInfoSchema } from "./schemas/provider.ts";
import { usageBodySchema } from "./schemas/usage.ts";

/**
 * `GET /openapi.json`: an OpenAPI 3.1 description of providerd's tenant and operational
 * routes, generated from the zod schemas the handlers parse with and build their answers
 * as (zod writes JSON Schema 2020-12, the dialect OpenAPI 3.1 uses). Built once, at
 * the first request. The backend callback route is not part of it: only backends call it.
 */
type Json = Record<string, unknown>;

const COMPONENTS = {
  Error: errorEnvelopeSchema,
  StatusBody: statusBodySchema,
  ConnectionBody: connectionBodySchema,
  ProvisionBody: provisionBodySchema,
  ReleasesBody: releasesBodySchema,
  LogsBody: logsBodySchema,
  RestoreRequest: restoreBodySchema,
  RestoreAccepted: restoreAcceptedSchema,
  EventFrame: eventFrameSchema,
  ProviderInfo: providerInfoSchema,
  HealthReport: healthReportSchema,
  WorkloadsBody: workloadsBodySchema,
  MaintenanceAccepted: maintenanceAcceptedSchema,
  UpdateBody: updateBodySchema,
  UsageBody: usageBodySchema,
} as const;
type Component = keyof typeof COMPONENTS;

const ref = (name: Component) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: Component) => ({ content: { "application/json": { schema: ref(name) } } });

/** Drops the keys zod adds for a standalone schema ($schema, and $id from the registry). */
function embedded(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

function componentSchemas(): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(COMPONENTS)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, { uri: (id) => `#/components/schemas/${id}` });
  return Object.fromEntries(Object.entries(schemas).map(([id, s]) => [id, embedded(s as Json)]));
}

/** One OpenAPI parameter per property of a path or query schema (strings on the wire). */
function parameters(where: "path" | "query", schema: z.ZodObject): Json[] {
  const js = z.toJSONSchema(schema, { io: "input" }) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(js.properties ?? {}).map(([name, prop]) => {
    const { description, ...rest } = prop;
    return {
      name,
      in: where,
      required: where === "path" || (js.required ?? []).includes(name),
      ...(description === undefined ? {} : { description }),
      schema: rest,
    };
  });
}

const REFUSALS: Record<string, string> = {
  "400": "Malformed lease UUID or query",
  "401": "Token missing, invalid, expired, for another lease, or (replay-protected routes) already used",
  "403": "The lease belongs to another tenant or provider",
  "404": "No such lease (or not in the required state), or nothing provisioned for it",
  "409": "Nothing was stored (a payload exists, no payload store, or the write failed)",
  "429": "Rate limit exceeded (Retry-After says when to retry)",
  "500": "The chain or backend read failed",
  "502":
    "The lease's backend answered off its contract (an unreadable body or a status a read never gets); none of its text is relayed",
  "501": "The lease's backend does not support this read (reason unsupported)",
  "503":
    "Temporarily unavailable: request deadline, chain read queue full, replay store, placement unresolved, log capacity (Retry-After: 1 where retrying soon helps)",
};

function refusals(codes: readonly string[]): Json {
  return Object.fromEntries(codes.map((c) => [c, { description: REFUSALS[c], ...json("Error") }]));
}

const LEASE_REFUSALS = ["400", "401", "403", "404", "429", "500", "503"] as const;
/** The reads that relay the owner's answer add 502 (an off-contract answer). */
const RELAYING_REFUSALS = ["400", "401", "403", "404", "429", "500", "502", "503"] as const;
const lease = parameters("path", leaseParamsSchema);
const bearer = [{ tenantToken: [] }];

function leaseRead(
  summary: string,
  body: Component,
  extraParams: Json[] = [],
  description?: string,
  codes: readonly string[] = RELAYING_REFUSALS,
): Json {
  return {
    get: {
      summary,
      ...(description === undefined ? {} : { description }),
      security: bearer,
      parameters: [...lease, ...extraParams],
      responses: { "200": { description: "OK", ...json(body) }, ...refusals(codes) },
    },
  };
}

/** The logs read's second form: `follow=true` upgraded to a WebSocket (routes/log-follow.ts). */
const logFollowQuerySchema = z.object({
  follow: z
    .enum(["true", "false"])
    .optional()
    .describe("true with a WebSocket upgrade: stream the lines as written"),
  token: z
    .string()
    .optional()
    .describe("The access token, when no Authorization header can be set (follow only)"),
});

function withLogFollow(read: Json): Json {
  const get = (read as { get: Record<string, unknown> }).get;
  return {
    get: {
      ...get,
      description:
        'With follow=true and a WebSocket upgrade: a stream of JSON text frames {service, instance, ts, stream, line}, starting with the last tail lines (tail may be 0 here), plus {"type":"instance",…} when a container was replaced and {"type":"dropped",…} counting lines past the rate. Refusals are plain HTTP answers before the upgrade (follow=true without an upgrade is 400; 501 when the backend cannot stream; 503 at the stream caps). Close codes: 4000 lease ended, 1001 shutdown, 1011 backend stream broken, 1013 lifetime, 1008 client data.',
      parameters: [...(get.parameters as Json[]), ...parameters("query", logFollowQuerySchema)],
      responses: {
        "101": { description: "Switching Protocols (follow=true): the stream of log frames" },
        ...(get.responses as Record<string, Json>),
        "501": { description: "follow=true: the lease's backend cannot stream logs" },
      },
    },
  };
}

/** `POST restore`: its refusals mean more than the shared wording says. */
const RESTORE_REFUSALS: Record<string, string> = {
  "400":
    "Malformed lease UUID or from_lease_uuid, equal leases, items that do not match the retained set, or a billing-only target (reason billing_only)",
  "401": REFUSALS["401"] as string,
  "403": "The target lease belongs to another tenant or provider",
  "404":
    "No such target lease, or no restorable data of yours under from_lease_uuid (absent, not ended, another tenant's, not retained)",
  "409":
    "Lifecycle work on the source or target (reason source_busy / target_busy), or the target is not PENDING (reason target_not_pending)",
  "410": "Your ended source lease was held by a backend retired as lost (reason backend_storage_lost)",
  "422": "The retained data exceeds the smaller tier's disk_mb (the backend's refusal, relayed)",
  "429": REFUSALS["429"] as string,
  "500": "The chain read failed, or the backend's answer proves nothing (the target's attempt is kept)",
  "502": "The backend refused with an off-contract error body (the target's attempt is kept)",
  "503":
    "Temporarily unavailable: source placement unresolved, backend unknown or unreachable, no capacity, replay store, request deadline",
};

/** Restart and update answer the seed's codes, each with its own meaning. */
const MAINTENANCE_REFUSALS: Record<string, string> = {
  "400":
    "Bad lease UUID; Idempotency-Key missing (unlisted tenant), repeated or not a canonical UUIDv4; bad update body or manifest; or the backend's validation refusal (kept for exact retries)",
  "401": "Token missing, invalid, expired, for another lease, or already used",
  "403": "The lease belongs to another tenant or provider",
  "404": "The backend reports the lease is not provisioned",
  "409":
    "invalid state for restart / invalid state for update: another command or lifecycle operation is in progress (reason command_in_progress) or the backend reports a state that cannot be changed (reason backend_invalid_state); lease not found or not active (reason lease_not_active); the key was used for another command; or (exact retry) the update failed",
  "410":
    "reason maintenance_expired: the command is older than the lease's retained maintenance history and did not run",
  "429":
    "Rate limit exceeded, or reason maintenance_capacity_reserved: shared capacity is kept for tenants without pending work (Retry-After: 1)",
  "500":
    "The backend accepted the command but its acceptance is not yet durably recorded (recovery continues), or an internal error",
  "503":
    "Dispatch blocked or uncertain (the recorded command is retried automatically), capacity refusal, chain lease unreadable, no usable placement, no payload store, or maintenance capacity exhausted",
};

function maintenanceCommand(summary: string, requestBody?: Json): Json {
  return {
    post: {
      summary,
      security: bearer,
      parameters: [
        ...lease,
        {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description:
            'Canonical UUIDv4, scoped to the lease; required unless the tenant is listed in maintenance_legacy_idempotency_tenants (or the list is ["*"]): such a command is keyed by its single-use token',
          schema: { type: "string", format: "uuid" },
        },
      ],
      ...(requestBody === undefined ? {} : { requestBody }),
      responses: {
        "202": { description: "Accepted by the backend", ...json("MaintenanceAccepted") },
        ...Object.fromEntries(
          Object.entries(MAINTENANCE_REFUSALS).map(([c, d]) => [c, { description: d, ...json("Error") }]),
        ),
      },
    },
  };
}

const operational = (summary: string, responses: Json): Json => ({
  get: { summary, responses: { ...responses, ...refusals(["429"]) } },
});

export function openApiDocument(): Json {
  return {
    openapi: "3.1.0",
    info: {
      title: "Fred providerd: tenant and operational API",
      version: pkg.version,
      description:
        "Lease endpoints authenticate with an ADR-036 bearer token signed by the lease's tenant (docs/tenant-api.md). Every refusal is the Error envelope.",
    },
    paths: {
      "/v1/leases/{lease_uuid}/status": leaseRead(
        "Chain state and providerd's view of a lease",
        "StatusBody",
        parameters("query", includeQuerySchema),
        "Two forms. Without include, exactly the reference's keys. With include=credit, include=terminal_budget or include=credit,terminal_budget, also the keys named (each only when there is a value to report). Another include value, or include given twice, is 400.",
        LEASE_REFUSALS,
      ),
      "/v1/leases/{lease_uuid}/connection": leaseRead(
        "Where the workload listens (ACTIVE leases; the token is spent)",
        "ConnectionBody",
      ),
      "/v1/leases/{lease_uuid}/provision": leaseRead(
        "The backend's diagnostics of the lease",
        "ProvisionBody",
        parameters("query", includeQuerySchema),
        "Two forms. Without include, exactly the reference's keys. With include=terminal_budget (alone or beside credit, which adds nothing here), also terminal_budget when the backend reports one. Another include value, or include given twice, is 400.",
      ),
      "/v1/leases/{lease_uuid}/releases": leaseRead("The lease's release history", "ReleasesBody"),
      "/v1/leases/{lease_uuid}/logs": withLogFollow(
        leaseRead("Container logs, tail lines each", "LogsBody", parameters("query", logsQuerySchema)),
      ),
      "/v1/leases/{lease_uuid}/usage": leaseRead(
        "What each instance uses now, and the last hour of samples",
        "UsageBody",
        [],
        "Units are in the field names; every history array is aligned with history.timestamps (null: not sampled). 501 (reason unsupported): the lease's backend does not sample usage.",
        [...RELAYING_REFUSALS, "501"],
      ),
      "/v1/leases/{lease_uuid}/data": {
        post: {
          summary: "Upload the manifest of a PENDING lease (payload token; SHA-256 must equal meta_hash)",
          security: bearer,
          parameters: lease,
          requestBody: {
            required: true,
            content: {
              "application/octet-stream": {
                schema: { type: "string", contentMediaType: "application/octet-stream" },
              },
            },
          },
          responses: {
            "202": { description: "Stored durably; provisioning has started" },
            ...refusals(["400", "401", "403", "404", "409", "429", "500", "503"]),
          },
        },
      },
      "/v1/leases/{lease_uuid}/restore": {
        post: {
          summary: "Restore a closed or expired lease's retained data into this fresh PENDING lease",
          description:
            "Replay-protected access token of the target. Same-backend: the data is adopted where it is retained. On 202 the target goes through provisioning to ready (acknowledged on chain) or failed (rejected with RestoreFailed's message).",
          security: bearer,
          parameters: lease,
          requestBody: { required: true, ...json("RestoreRequest") },
          responses: {
            "202": {
              description: "Admitted durably and accepted by the backend",
              ...json("RestoreAccepted"),
            },
            ...Object.fromEntries(
              Object.entries(RESTORE_REFUSALS).map(([c, description]) => [
                c,
                { description, ...json("Error") },
              ]),
            ),
          },
        },
      },
      "/v1/leases/{lease_uuid}/restart": maintenanceCommand(
        "Recreate the lease's containers from the same manifest (volumes kept)",
      ),
      "/v1/leases/{lease_uuid}/update": maintenanceCommand("Deploy a new manifest to the lease", {
        required: true,
        content: { "application/json": { schema: ref("UpdateBody") } },
      }),
      "/v1/leases/{lease_uuid}/events": {
        get: {
          summary: "WebSocket of the lease's status frames (EventFrame, a snapshot first)",
          description:
            'Checked before the upgrade, so refusals are plain HTTP answers. After 101 the server pushes JSON text frames shaped as EventFrame; with since or notices a {"type":"reset"} frame may come too. Close codes: 1008 client data, 1009 too large, 1013 caps or lifetime, 1001 shutdown.',
          security: bearer,
          parameters: [...lease, ...parameters("query", eventsQuerySchema)],
          responses: {
            "101": { description: "Switching Protocols: the stream of EventFrame texts" },
            ...refusals(LEASE_REFUSALS),
          },
        },
      },
      "/v1/leases/{lease_uuid}/shell": {
        get: {
          summary: "WebSocket running a command in the lease's service (v5.channel.k8s.io framing)",
          description:
            "Single-use access token, ACTIVE leases only; every refusal comes before the upgrade, as a plain HTTP answer. Binary messages, first byte the channel: 0 stdin, 1 stdout, 2 stderr, 3 exit status (Kubernetes Status JSON), 4 resize {Width,Height}, 255 close of a stream ([255,0]: stdin closed). Close codes: 1000 exited, 1001 shutdown, 1008 malformed frame, 1009 over 64 KiB, 1011 backend failed, 4000 idle timeout, 4001 maximum duration.",
          security: bearer,
          parameters: [...lease, ...parameters("query", shellQuerySchema)],
          responses: {
            "101": { description: "Switching Protocols (subprotocol v5.channel.k8s.io): the session" },
            ...refusals(LEASE_REFUSALS),
            "409": { description: "The lease's workload is not ready (reason not_ready)", ...json("Error") },
            "501": { description: "The lease's backend does not support shell sessions", ...json("Error") },
          },
        },
      },
      "/v1/provider": operational("Who this provider is and what it accepts (no token)", {
        "200": { description: "OK", ...json("ProviderInfo") },
      }),
      "/health": operational("Health of providerd and its dependencies (always 200)", {
        "200": { description: "The report", ...json("HealthReport") },
      }),
      "/readyz": operational("Readiness: 200 when ready, 503 with the same report when not", {
        "200": { description: "Ready", ...json("HealthReport") },
        "503": { description: "Not ready", ...json("HealthReport") },
      }),
      "/workloads": {
        get: {
          summary: "What runs for each lease asked for (no token; the admin app's leases page)",
          description:
            "A lease with a confirmed owner asks only that backend, others every unfenced backend. 400 (the Error envelope) when lease_uuid is missing, given more than 100 times, or not a canonical UUID.",
          parameters: parameters("query", workloadsQuerySchema),
          responses: {
            "200": {
              description: "The workloads found and the backends that could not answer",
              ...json("WorkloadsBody"),
            },
            "400": { description: "lease_uuid missing, more than 100, or malformed", ...json("Error") },
            ...refusals(["429"]),
          },
        },
      },
      "/metrics": operational("Prometheus metrics", {
        "200": {
          description: "Prometheus text format",
          content: { "text/plain": { schema: { type: "string" } } },
        },
      }),
      "/openapi.json": operational("This document", {
        "200": {
          description: "OpenAPI 3.1",
          content: { "application/json": { schema: { type: "object" } } },
        },
      }),
    },
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        tenantToken: {
          type: "http",
          scheme: "bearer",
          description: "base64 JSON {tenant, lease_uuid, timestamp, pub_key, signature} signed with ADR-036",
        },
      },
    },
  };
}

export function registerOpenApiRoute(app: FastifyInstance): void {
  // Built at the first request, not at start: the document and zod's JSON Schema pass over
  // every schema would otherwise be held by every daemon that is never asked for it.
  let body: string | undefined;
  app.get("/openapi.json", async (_req, reply) => {
    body ??= JSON.stringify(openApiDocument());
    return reply.code(200).type("application/json").send(body);
  });
}
