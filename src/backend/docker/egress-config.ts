import { z } from "zod";
import { parseConfigDuration } from "../../core/duration.ts";
import { type EgressEntry, type EgressPolicy, parseCidr } from "./egress-rules.ts";

/**
 * The `egress:` block of the Docker backend's config: the operator's allow and deny entries
 * (each a CIDR, optionally a port and a protocol), how often the sweep checks the kernel's
 * table, and `enforce`, which only development may turn off. Every entry is checked here, so
 * a bad one refuses the start with its key named (`egress.allow.0.cidr: …`).
 */

const DEFAULT_SWEEP_INTERVAL_MS = 30_000;

const cidr = z.string().transform((text, ctx) => {
  const parsed = parseCidr(text);
  if (!("problem" in parsed)) return parsed;
  ctx.addIssue({ code: "custom", message: parsed.problem });
  return z.NEVER;
});

const entrySchema = z.strictObject({
  cidr,
  port: z.number().int("port must be an integer 1–65535").min(1).max(65535).optional(),
  protocol: z.enum(["tcp", "udp"]).optional(),
});

const sweepInterval = z.string().transform((text, ctx) => {
  const d = parseConfigDuration(text);
  if (d.ok && d.ms > 0) return d.ms;
  ctx.addIssue({ code: "custom", message: `${JSON.stringify(text)} is not a Go duration > 0` });
  return z.NEVER;
});

export const egressSchema = z
  .strictObject({
    enforce: z.boolean().default(true),
    sweep_interval: sweepInterval.default(DEFAULT_SWEEP_INTERVAL_MS),
    allow: z.array(entrySchema).default([]),
    deny: z.array(entrySchema).default([]),
  })
  .prefault({});

export type EgressFile = z.output<typeof egressSchema>;

export interface EgressConfig {
  /** false only in development: no rules are installed (a WARN at every start). */
  readonly enforce: boolean;
  readonly sweepIntervalMs: number;
  readonly policy: EgressPolicy;
}

function entry(e: EgressFile["allow"][number]): EgressEntry {
  return Object.freeze({
    cidr: e.cidr.cidr,
    family: e.cidr.family,
    ...(e.port === undefined ? {} : { port: e.port }),
    ...(e.protocol === undefined ? {} : { protocol: e.protocol }),
  });
}

/** The frozen block; throws a sentence naming the key when production_mode forbids it. */
export function egressConfig(file: EgressFile, productionMode: boolean): EgressConfig {
  if (productionMode && !file.enforce)
    throw new Error("egress.enforce: false is refused in production_mode (tenants would reach the host)");
  return Object.freeze({
    enforce: file.enforce,
    sweepIntervalMs: file.sweep_interval,
    policy: Object.freeze({
      allow: Object.freeze(file.allow.map(entry)),
      deny: Object.freeze(file.deny.map(entry)),
    }),
  });
}
