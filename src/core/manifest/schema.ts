import { z } from "zod";
import { checkDependencies, type DependencyNode } from "./dependencies.ts";
import { MANIFEST_LIMITS } from "./limits.ts";
import { flatServiceSchema, stackServiceSchema } from "./service-schema.ts";

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
