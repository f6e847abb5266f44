import { z } from "zod";
import { LEASE_STATES } from "../../../chain/port.ts";
import { terminalBudgetSchema } from "../../../core/backend-contract/index.ts";
import { CANONICAL_UUID } from "../../../core/uuid.ts";

/**
 * The lease endpoints' wire shapes, once: the handlers parse their path and query with
 * the request schemas and build their answers as the response types, and the OpenAPI
 * document (`GET /openapi.json`) is generated from the same objects. A refusal's wording
 * is each schema's error message, so moving a check here changed no answer.
 */

/** `{"error", "code", "reason"?}`: every refusal of the tenant API. */
export const errorEnvelopeSchema = z.object({
  error: z.string().describe("Text written for tenants; never internal detail"),
  code: z.number().int().describe("The HTTP status"),
  reason: z.string().optional().describe("A machine-readable refinement, e.g. billing_only"),
});

export const leaseParamsSchema = z.object({
  lease_uuid: z.string().regex(CANONICAL_UUID).describe("Canonical lowercase lease UUID"),
});

const FROM_INVALID = "from_lease_uuid is not a valid UUID";

/** `POST restore` body: the closed or expired lease whose retained data to adopt. */
export const restoreBodySchema = z.object(
  {
    from_lease_uuid: z
      .string({ error: FROM_INVALID })
      .regex(CANONICAL_UUID, FROM_INVALID)
      .describe("The closed or expired lease whose retained data is adopted"),
  },
  { error: FROM_INVALID },
);

/** `POST restore` 202: the target now goes through provisioning to ready or failed. */
export const restoreAcceptedSchema = z.object({ status: z.literal("provisioning") });

export const DEFAULT_TAIL = 100;
export const MAX_TAIL = 10_000;
const TAIL_INVALID = "tail must be a positive integer";

/** `GET logs?tail=`: lines per container, 1..10000; omitted or empty is 100. */
export const logsQuerySchema = z.object({
  tail: z
    .string({ error: TAIL_INVALID })
    .regex(/^\d{0,6}$/, TAIL_INVALID)
    .refine((t) => t === "" || Number(t) >= 1, TAIL_INVALID)
    .refine((t) => t === "" || Number(t) <= MAX_TAIL, `tail must not exceed ${MAX_TAIL}`)
    .optional()
    .describe(`Lines per container, 1 to ${MAX_TAIL} (default ${DEFAULT_TAIL})`),
});

const once = (key: string) => z.string({ error: `${key} may be given once` });

/** `GET events` query: a token for browsers, a resume cursor, the opt-in to notice frames. */
export const eventsQuerySchema = z.object({
  token: once("token").optional().describe("The access token, when no Authorization header can be set"),
  since: once("since")
    .regex(/^\d{1,16}$/, "since must be a frame seq")
    .optional()
    .describe("Resume after this frame seq"),
  notices: once("notices").optional().describe("Any value but 0/false: also send reset and notice frames"),
});

/**
 * `GET shell` query, for the OpenAPI document; requests are read by parseExecQuery
 * (src/core/exec-channel.ts), whose checks these descriptions state.
 */
export const shellQuerySchema = z.object({
  service: z.string().optional().describe("The service to enter (default: the lease's first)"),
  instance: z
    .string()
    .regex(/^\d{1,4}$/)
    .optional()
    .describe("0-based instance of the service (default 0)"),
  tty: z
    .enum(["true", "false", "1", "0"])
    .optional()
    .describe("A terminal: one output stream, resizes apply"),
  command: z
    .array(z.string())
    .optional()
    .describe("Repeatable: one argv entry each (default the image's shell, /bin/sh; at most 64, 16 KiB)"),
  token: once("token").optional().describe("The access token, when no Authorization header can be set"),
});

/** The keys of ours a status or provision answer carries only when `include` asks for them. */
export const EXTRA_KEYS = ["credit", "terminal_budget"] as const;
export type ExtraKey = (typeof EXTRA_KEYS)[number];
const INCLUDE_INVALID = `include must be a comma-separated list of ${EXTRA_KEYS.join(", ")}`;

/**
 * `GET status` / `GET provision` query: by default the answer has exactly the reference's
 * keys; `include` adds ours (either or both, once each). `credit` adds nothing to provision.
 */
export const includeQuerySchema = z.object({
  include: once("include")
    .refine((v) => {
      const asked = v.split(",");
      return (
        new Set(asked).size === asked.length &&
        asked.every((k) => (EXTRA_KEYS as readonly string[]).includes(k))
      );
    }, INCLUDE_INVALID)
    .transform((v) => new Set(v.split(",") as ExtraKey[]))
    .optional()
    .describe(
      "Comma-separated extra keys of this provider to add to the answer: credit (status only), terminal_budget. Without it the answer has exactly the reference's keys",
    ),
});

const leaseState = z.enum(LEASE_STATES);
const leaseHeader = {
  lease_uuid: z.string(),
  tenant: z.string(),
  provider_uuid: z.string(),
};
const text = () => z.string().optional();

/** The retained fields of GET status and GET provision: present only for retained data. */
const retainedShape = {
  retained_until: text().describe("RFC 3339 retention deadline, when an age limit applies"),
  items: z
    .array(z.object({ service_name: z.string(), sku: z.string(), quantity: z.number().int().positive() }))
    .optional()
    .describe("The restore shape to open the fresh lease with"),
  restore_hint: text().describe("The next step for restoring"),
  partition: text().describe("The retention partition recorded with the data"),
};

export const statusBodySchema = z.object({
  ...leaseHeader,
  state: leaseState,
  requires_payload: z.boolean(),
  meta_hash_hex: text(),
  payload_received: z.boolean(),
  provisioning_started: z.boolean(),
  provision_status: text(),
  fail_count: z.number().int().positive().optional(),
  terminal_budget: terminalBudgetSchema
    .optional()
    .describe("The backend's consecutive-failure budget; only with include=terminal_budget"),
  reason: text(),
  message: text(),
  ...retainedShape,
  credit: z
    .object({ balance: z.string(), burn_rate_per_hour: z.string(), depletes_at: z.string().nullable() })
    .optional()
    .describe("The tenant's credit, when the chain could be read; only with include=credit"),
});

const portBinding = z.object({ host_ip: z.string(), host_port: z.number().int().min(0).max(65_535) });
const ports = z.record(z.string(), portBinding);
const instance = z.object({
  instance_index: z.number().int(),
  container_id: text(),
  image: text(),
  status: text(),
  fqdn: text(),
  ports: ports.optional(),
});

export const connectionSchema = z.object({
  host: z.string(),
  fqdn: text(),
  ports: ports.optional(),
  instances: z.array(instance).optional(),
  services: z.record(z.string(), z.object({ fqdn: text(), instances: z.array(instance) })).optional(),
  protocol: text(),
  metadata: z.record(z.string(), z.string()).optional(),
});

export const connectionBodySchema = z.object({ ...leaseHeader, connection: connectionSchema });

export const provisionBodySchema = z.object({
  ...leaseHeader,
  status: z.string(),
  fail_count: z.number().int().min(0),
  terminal_budget: terminalBudgetSchema
    .optional()
    .describe("The backend's consecutive-failure budget; only with include=terminal_budget"),
  reason: text(),
  message: text(),
  ...retainedShape,
});

export const releaseSchema = z.object({
  version: z.number().int(),
  image: text(),
  status: text(),
  created_at: text(),
  reason: text(),
  message: text(),
  manifest: text().describe("Standard base64 of the release's manifest; registry passwords are masked"),
  image_digest: text().describe(
    "The immutable image a single-service release runs: name@sha256:… (repo digest), or the image ID sha256:… for an image no registry served; absent until pinned and for stacks",
  ),
  image_digests: z
    .record(z.string(), z.string())
    .optional()
    .describe("Service name → the immutable image reference it runs, once pinned"),
});

export const releasesBodySchema = z.object({ ...leaseHeader, releases: z.array(releaseSchema) });

export const logsBodySchema = z.object({
  ...leaseHeader,
  logs: z.record(z.string(), z.string()).describe('Text per "<service>/<instance>"'),
});

/** A frame of the event stream (text, JSON); a snapshot adds `"type":"snapshot"`. */
export const eventFrameSchema = z.object({
  type: z.literal("snapshot").optional(),
  lease_uuid: z.string(),
  status: z.string(),
  error: text(),
  timestamp: z.string(),
  seq: z.number().int(),
  state: leaseState,
});

/** `POST restart` / `POST update`: 202 once the backend accepted the journaled command. */
export const maintenanceAcceptedSchema = z.object({
  status: z.enum(["restarting", "updating"]).describe("The command in progress"),
});

/** `POST update`'s body. */
export const updateBodySchema = z.object({
  payload: z.string().describe("The new manifest, standard padded base64"),
});

export type StatusBody = z.infer<typeof statusBodySchema>;
export type Connection = z.infer<typeof connectionSchema>;
export type ConnectionBody = z.infer<typeof connectionBodySchema>;
export type ProvisionBody = z.infer<typeof provisionBodySchema>;
export type Release = z.infer<typeof releaseSchema>;
export type ReleasesBody = z.infer<typeof releasesBodySchema>;
export type LogsBody = z.infer<typeof logsBodySchema>;
export type RestoreAccepted = z.infer<typeof restoreAcceptedSchema>;
