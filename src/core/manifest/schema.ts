import { z } from "zod";
import { durationSchema } from "./duration-schema.ts";
import { MANIFEST_LIMITS } from "./limits.ts";
import {
  caseInsensitive,
  checkDependencies,
  cleanPath,
  type DependencyNode,
  exposeProblem,
  healthTestProblem,
  parsePortKey,
  parseRegistry,
  registryHost,
  tmpfsProblem,
} from "./rules.ts";

/**
 * The zod schemas of a tenant manifest: one service first, then the documents built
 * from it (the stack shape, the flat shape, and their union for the published JSON Schema).
 */

// One service.

/**
 * The zod schema of one service (fred-wire §3.2–3.3). Every object is strict, so an
 * unknown key (`volumes`, `resources`, a typo) is a problem at its own pointer. Rules a
 * JSON Schema can express are written as patterns and limits (they then appear in the
 * generated schema for clients); the rest are refinements next to the field they judge.
 */

function tooMany(max: number, what: string): string {
  return `at most ${max} ${what} are allowed`;
}

/** A string-keyed map with an entry limit that also shows up as maxProperties. */
function limitedRecord<K extends z.ZodType<string, string>, V extends z.ZodType>(
  key: K,
  value: V,
  max: number,
  what: string,
) {
  return z
    .record(key, value)
    .check(
      z.superRefine(
        (record, ctx) => {
          if (record !== null && typeof record === "object" && Object.keys(record).length > max)
            ctx.addIssue({ code: "custom", message: tooMany(max, what), input: record });
        },
        { when: () => true },
      ),
    )
    .meta({ maxProperties: max });
}

const PORT_KEY_SHAPE = new RegExp(`^[+-]?[0-9]+/(${caseInsensitive("tcp")}|${caseInsensitive("udp")})$`);

const portKeySchema = z
  .string()
  .regex(PORT_KEY_SHAPE, { error: 'port must be written "<port>/<tcp|udp>", e.g. "80/tcp"' })
  .superRefine((key, ctx) => {
    if (!PORT_KEY_SHAPE.test(key)) return;
    const parsed = parsePortKey(key);
    if (typeof parsed === "string") ctx.addIssue({ code: "custom", message: parsed, input: key });
  });

const portSchema = z
  .strictObject({
    host_port: z
      .int({ error: "host_port must be an integer" })
      .min(0, { error: "host_port must be between 0 and 65535" })
      .max(65535, { error: "host_port must be between 0 and 65535" })
      .optional()
      .meta({ description: "Must be 0 or omitted when deploying: host ports are always assigned." }),
    ingress: z.boolean().optional().meta({ description: "Marks the one TCP port that ingress routes to." }),
  })
  .meta({ description: "Port options." });

/**
 * Rules across the ports of one service: no port declared twice (Go would accept "80/tcp"
 * next to "80/TCP"; Docker would then merge them silently), ingress on TCP only, and at
 * most one ingress port. Runs even when a sibling entry is invalid, reading defensively.
 */
function checkPortSet(ports: unknown, ctx: z.core.$RefinementCtx<unknown>): void {
  if (ports === null || typeof ports !== "object") return;
  const seen = new Map<string, string>();
  const ingress: string[] = [];
  for (const [key, options] of Object.entries(ports)) {
    const parsed = parsePortKey(key);
    if (typeof parsed === "string") continue;
    const canonical = `${parsed.port}/${parsed.protocol}`;
    const earlier = seen.get(canonical);
    if (earlier !== undefined) {
      ctx.addIssue({
        code: "custom",
        message: `port ${canonical} is already declared as ${JSON.stringify(earlier)}`,
        path: [key],
        input: key,
      });
    }
    seen.set(canonical, key);
    if (
      options !== null &&
      typeof options === "object" &&
      (options as { ingress?: unknown }).ingress === true
    ) {
      ingress.push(key);
      if (parsed.protocol !== "tcp")
        ctx.addIssue({
          code: "custom",
          message: "ingress is only possible on a TCP port",
          path: [key, "ingress"],
          input: key,
        });
    }
  }
  if (ingress.length > 1) {
    ctx.addIssue({
      code: "custom",
      message: `at most one port may set ingress, found ${ingress.map((k) => JSON.stringify(k)).join(", ")}`,
      input: ports,
    });
  }
}

const portsSchema = limitedRecord(portKeySchema, portSchema, MANIFEST_LIMITS.maxPorts, "ports").check(
  z.superRefine(checkPortSet, { when: () => true }),
);

const envNameSchema = z
  .string()
  .min(1, { error: "variable name must not be empty" })
  .regex(/^[^=\u0000]*$/, { error: "variable name must not contain '=' or NUL" })
  .regex(new RegExp(`^(?!${caseInsensitive("PATH")}$)`), { error: "PATH may not be set" })
  .regex(new RegExp(`^(?!${caseInsensitive("LD_")})`), { error: "names starting with LD_ are reserved" })
  .regex(new RegExp(`^(?!${caseInsensitive("FRED_")})`), { error: "names starting with FRED_ are reserved" })
  .regex(new RegExp(`^(?!${caseInsensitive("DOCKER_")})`), {
    error: "names starting with DOCKER_ are reserved",
  });

const labelKeySchema = z
  .string()
  .regex(new RegExp(`^(?!${caseInsensitive("fred.")})`), {
    error: 'label keys starting with "fred." are reserved',
  })
  .regex(new RegExp(`^(?!${caseInsensitive("traefik.")})`), {
    error: 'label keys starting with "traefik." are reserved',
  });

/** Zero means "use the image's or Docker's default", so it is dropped from the parsed form. */
const healthDurationSchema = durationSchema
  .refine((ns) => ns >= 0, { error: "duration must not be negative" })
  .transform((ns) => (ns === 0 ? undefined : ns));

const healthCheckSchema = z
  .strictObject({
    test: z
      .array(z.string())
      .min(1, { error: "health_check.test must not be empty" })
      .superRefine((test, ctx) => {
        const problem = test.length === 0 ? undefined : healthTestProblem(test);
        if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem, input: test });
      })
      .meta({ description: '["CMD", cmd, args…], ["CMD-SHELL", "shell text"] or ["NONE"].' }),
    interval: healthDurationSchema.optional(),
    timeout: healthDurationSchema.optional(),
    retries: z
      .int({ error: "retries must be an integer" })
      .min(0, { error: "retries must not be negative" })
      .optional(),
    start_period: healthDurationSchema.optional(),
  })
  .transform((check) => {
    // Drop zero durations entirely so the parsed form never carries `key: undefined`.
    const out: {
      test: string[];
      interval?: number;
      timeout?: number;
      retries?: number;
      start_period?: number;
    } = { test: check.test };
    if (check.interval !== undefined) out.interval = check.interval;
    if (check.timeout !== undefined) out.timeout = check.timeout;
    if (check.retries !== undefined) out.retries = check.retries;
    if (check.start_period !== undefined) out.start_period = check.start_period;
    return out;
  });

const tmpfsSchema = z
  .array(
    z.string().superRefine((path, ctx) => {
      const problem = tmpfsProblem(path);
      if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem, input: path });
    }),
  )
  .max(MANIFEST_LIMITS.maxTmpfs, { error: tooMany(MANIFEST_LIMITS.maxTmpfs, "tmpfs mounts") })
  .superRefine((paths, ctx) => {
    const seen = new Set<string>();
    paths.forEach((path, index) => {
      const cleaned = cleanPath(path);
      if (seen.has(cleaned))
        ctx.addIssue({
          code: "custom",
          message: `duplicate tmpfs path ${cleaned}`,
          path: [index],
          input: path,
        });
      seen.add(cleaned);
    });
  });

const exposeSchema = z
  .array(
    z.string().superRefine((entry, ctx) => {
      const problem = exposeProblem(entry);
      if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem, input: entry });
    }),
  )
  .max(MANIFEST_LIMITS.maxExpose, { error: tooMany(MANIFEST_LIMITS.maxExpose, "expose entries") })
  .superRefine((entries, ctx) => {
    const seen = new Set<string>();
    entries.forEach((entry, index) => {
      if (seen.has(entry))
        ctx.addIssue({
          code: "custom",
          message: `duplicate expose entry ${entry}`,
          path: [index],
          input: entry,
        });
      seen.add(entry);
    });
  });

export const DEPENDENCY_CONDITIONS = ["service_started", "service_healthy"] as const;

const dependencySchema = z.strictObject({
  condition: z.enum(DEPENDENCY_CONDITIONS, {
    error: 'condition must be "service_started" or "service_healthy"',
  }),
});

/**
 * Pull credentials for the service's image registry (Akash SDL's form). The password is a
 * secret: the backend uses it only to pull this service's image and never shows it back.
 */
const credentialsSchema = z
  .strictObject({
    host: z
      .string({ error: "credentials.host is required and must be a string" })
      .max(MANIFEST_LIMITS.credentialsFieldMaxLength)
      .refine((host) => registryHost(host) !== undefined, {
        error: 'credentials.host must be a registry host such as "ghcr.io" or "registry.example.com:5000"',
      }),
    username: z
      .string({ error: "credentials.username is required and must be a string" })
      .min(1, { error: "credentials.username must not be empty" })
      .max(MANIFEST_LIMITS.credentialsFieldMaxLength),
    password: z
      .string({ error: "credentials.password is required and must be a string" })
      .min(1, { error: "credentials.password must not be empty" })
      .max(MANIFEST_LIMITS.credentialsFieldMaxLength),
  })
  .meta({
    description:
      "Pull credentials for the image's registry; host must be the image's registry. Never returned by any read.",
  });

/** `credentials.host` must name the registry the service's image comes from. */
function checkCredentialsHost(service: unknown, ctx: z.core.$RefinementCtx<unknown>): void {
  if (service === null || typeof service !== "object") return;
  const { image, credentials } = service as { image?: unknown; credentials?: unknown };
  if (typeof image !== "string" || credentials === null || typeof credentials !== "object") return;
  const host = registryHost(String((credentials as { host?: unknown }).host ?? ""));
  if (host === undefined) return; // the host's own rule reports it
  let registry: string;
  try {
    registry = parseRegistry(image);
  } catch {
    return; // an unparsable image is reported where images are checked
  }
  if (host !== registry) {
    ctx.addIssue({
      code: "custom",
      path: ["credentials", "host"],
      message: `credentials.host ${JSON.stringify(host)} is not the registry of the image (${JSON.stringify(registry)})`,
      input: credentials,
    });
  }
}

export const serviceFields = {
  image: z
    .string({ error: "image is required and must be a string" })
    .min(1, { error: "image must not be empty" })
    .meta({ description: "Container image reference, e.g. nginx:1.27." }),
  ports: portsSchema.optional(),
  env: limitedRecord(envNameSchema, z.string(), MANIFEST_LIMITS.maxEnv, "env variables").optional(),
  command: z.array(z.string()).optional().meta({ description: "Replaces the image's entrypoint." }),
  args: z.array(z.string()).optional().meta({ description: "Replaces the image's command." }),
  labels: limitedRecord(labelKeySchema, z.string(), MANIFEST_LIMITS.maxLabels, "labels").optional(),
  health_check: healthCheckSchema.optional(),
  tmpfs: tmpfsSchema.optional(),
  user: z
    .string()
    .regex(/^([^ \t\r\n:]+(:[^ \t\r\n]+)?)?$/, {
      error: 'user must be "uid", "uid:gid", "name" or "name:group", without whitespace',
    })
    .optional(),
  depends_on: z.record(z.string(), dependencySchema).optional(),
  stop_grace_period: durationSchema
    .refine(
      (ns) => ns >= MANIFEST_LIMITS.stopGracePeriodMinNs && ns <= MANIFEST_LIMITS.stopGracePeriodMaxNs,
      {
        error: "stop_grace_period must be between 1s and 120s",
      },
    )
    .optional(),
  init: z.boolean().optional().meta({ description: "Run tini as PID 1." }),
  expose: exposeSchema.optional(),
  credentials: credentialsSchema.optional(),
};

/** One service inside `{"services": {...}}`. */
export const stackServiceSchema = z
  .strictObject(serviceFields)
  .check(z.superRefine(checkCredentialsHost, { when: () => true }))
  .meta({ id: "Service", description: "One service." });

/** The deprecated single-service document: the same fields, but depends_on has no peers to name. */
export const flatServiceSchema = z
  .strictObject({
    ...serviceFields,
    depends_on: serviceFields.depends_on
      .refine((deps) => deps === undefined || Object.keys(deps).length === 0, {
        error: "depends_on is only allowed in stack manifests",
      })
      .meta({ maxProperties: 0 }),
  })
  .check(z.superRefine(checkCredentialsHost, { when: () => true }))
  .meta({ description: 'Deprecated single-service manifest; it becomes service "app".' });

export type ServiceSpec = z.output<typeof stackServiceSchema>;

// The documents.

/**
 * Document-level schemas: the stack shape `{"services": {...}}`, the flat shape, and the
 * union of both that the JSON Schema for clients is generated from. Parsing never uses
 * the union (its errors would mix both shapes); parse.ts picks the shape first.
 */

const SERVICE_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

const serviceNameSchema = z
  .string()
  .max(MANIFEST_LIMITS.serviceNameMaxLength, {
    error: `service name must be at most ${MANIFEST_LIMITS.serviceNameMaxLength} characters`,
  })
  .regex(SERVICE_NAME, {
    error: "service name must be lowercase letters, digits and '-', not starting or ending with '-'",
  });

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The graph view the dependency rules need, read defensively: it runs even when some
 * service failed its own schema, so that all problems come back in one answer.
 */
function dependencyView(services: unknown): Map<string, DependencyNode> {
  const view = new Map<string, DependencyNode>();
  if (!isRecord(services)) return view;
  for (const [name, service] of Object.entries(services)) {
    if (!isRecord(service)) continue;
    const deps = isRecord(service["depends_on"]) ? service["depends_on"] : {};
    const dependsOn = new Map<string, unknown>();
    for (const [target, dep] of Object.entries(deps))
      dependsOn.set(target, isRecord(dep) ? dep["condition"] : undefined);
    const check = service["health_check"];
    const test = isRecord(check) && Array.isArray(check["test"]) ? check["test"] : [];
    view.set(name, { dependsOn, hasActiveHealthCheck: test.length > 0 && test[0] !== "NONE" });
  }
  return view;
}

export const stackManifestSchema = z
  .strictObject({
    services: z
      .record(serviceNameSchema, stackServiceSchema)
      .check(
        z.superRefine(
          (services, ctx) => {
            if (isRecord(services) && Object.keys(services).length === 0)
              ctx.addIssue({
                code: "custom",
                message: "services must have at least one entry",
                input: services,
              });
          },
          { when: () => true },
        ),
      )
      .meta({ minProperties: 1, description: "Service name → service." }),
  })
  .check(
    z.superRefine(
      (stack, ctx) => {
        const services = isRecord(stack) ? stack["services"] : undefined;
        for (const problem of checkDependencies(dependencyView(services))) {
          ctx.addIssue({
            code: "custom",
            message: problem.message,
            path: ["services", ...problem.path],
            input: stack,
          });
        }
      },
      { when: () => true },
    ),
  )
  .meta({ description: "Stack manifest: one or more named services." });

export const flatManifestSchema = flatServiceSchema;

/** Both accepted shapes; the source of the published JSON Schema. */
export const manifestDocumentSchema = z.union([stackManifestSchema, flatManifestSchema]).meta({
  title: "Fred tenant manifest",
  description:
    'A stack manifest {"services": {"<name>": {...}}} or the deprecated flat single-service form, ' +
    'which is treated as a stack with one service named "app". Some rules (port ranges, cleaned tmpfs ' +
    "paths, depends_on targets and cycles, one ingress port) are only checked by the server.",
});
