import { readFileSync, statSync } from "node:fs";
import type { Command } from "commander";
import { parseDurationMs } from "../core/duration.ts";
import { FredError } from "../core/errors.ts";
import { isCanonicalUuid } from "../core/uuid.ts";
import { isLoopbackHost } from "../provider/config/index.ts";
import { type LoadPlan, runLoad, type Scenario } from "./loadtest-run.ts";
import { printJson, say } from "./output.ts";

/** Hard ceilings, whatever the flags say: a load test is bounded in count and time. */
const MAX_COUNT = 1_000_000;
const MAX_DURATION_MS = 10 * 60_000;
const MAX_CONCURRENCY = 256;
const SCENARIOS: readonly Scenario[] = ["rejection", "status"];

interface LoadtestOptions {
  target: string;
  scenario: string;
  count: string;
  duration: string;
  concurrency: string;
  fixtures?: string;
  tenantKeyFile?: string;
  remote?: boolean;
}

function usage(message: string): FredError {
  return new FredError("ERR_USAGE", message);
}

function bounded(text: string, name: string, max: number): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1 || n > max)
    throw usage(`--${name} must be an integer from 1 to ${max}`);
  return n;
}

/** Reads the fixture leases and the tenant key (64 hex digits in a file no one else can read). */
function credentials(o: LoadtestOptions): Pick<LoadPlan, "leases" | "tenantKey"> {
  if (o.fixtures === undefined || o.tenantKeyFile === undefined) {
    throw usage("--scenario status needs --fixtures <file> and --tenant-key-file <file>");
  }
  const doc = JSON.parse(readFileSync(o.fixtures, "utf8")) as { leases?: { lease_uuid?: unknown }[] };
  const leases = (doc.leases ?? []).map((l) => l.lease_uuid);
  if (leases.length === 0 || !leases.every((l): l is string => typeof l === "string" && isCanonicalUuid(l))) {
    throw usage(`${o.fixtures} must be {"leases":[{"lease_uuid":"<uuid>"},…]} with at least one lease`);
  }
  if ((statSync(o.tenantKeyFile).mode & 0o077) !== 0) throw usage(`${o.tenantKeyFile} must be mode 0600`);
  const hex = readFileSync(o.tenantKeyFile, "utf8").trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw usage(`${o.tenantKeyFile} must hold exactly 64 hex digits`);
  return { leases, tenantKey: Buffer.from(hex, "hex") };
}

export function planFrom(o: LoadtestOptions): LoadPlan {
  let target: URL;
  try {
    target = new URL(o.target);
  } catch {
    throw usage(`--target ${o.target} is not a URL`);
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") throw usage("--target must be http(s)://");
  if (!isLoopbackHost(target.hostname.replace(/^\[(.*)\]$/, "$1")) && !o.remote) {
    throw usage(`--target ${target.origin} is not loopback; pass --remote to load a provider you operate`);
  }
  if (!SCENARIOS.includes(o.scenario as Scenario))
    throw usage(`--scenario must be one of ${SCENARIOS.join(", ")}`);
  const scenario = o.scenario as Scenario;
  let durationMs: number;
  try {
    durationMs = parseDurationMs(o.duration);
  } catch {
    throw usage(`--duration ${o.duration} is not a duration (e.g. 10s, 1m)`);
  }
  if (durationMs <= 0 || durationMs > MAX_DURATION_MS)
    throw usage("--duration must be above 0 and at most 10m");
  return {
    target,
    scenario,
    count: bounded(o.count, "count", MAX_COUNT),
    durationMs,
    concurrency: bounded(o.concurrency, "concurrency", MAX_CONCURRENCY),
    ...(scenario === "status" ? credentials(o) : {}),
  };
}

export function registerLoadtestCommand(program: Command): void {
  program
    .command("loadtest")
    .description("Send a bounded load scenario to a running providerd and print throughput and latency")
    .requiredOption("--target <url>", "providerd's base URL (loopback unless --remote)")
    .option("--scenario <name>", `one of ${SCENARIOS.join(", ")}`, "rejection")
    .option("--count <n>", "stop after this many requests", "1000")
    .option("--duration <d>", "stop after this long (at most 10m)", "10s")
    .option("--concurrency <n>", "requests in flight at once", "8")
    .option("--fixtures <file>", 'status: {"leases":[{"lease_uuid":"…"}]}, leases owned by the tenant key')
    .option(
      "--tenant-key-file <file>",
      "status: the tenant's secp256k1 private key, 64 hex digits, mode 0600",
    )
    .option("--remote", "allow a target that is not on loopback (a provider you operate)")
    .addHelpText(
      "after",
      `
Scenarios: rejection sends unauthenticated connection reads for random leases (a refusal
storm: every answer should be 401 or 429); status sends authenticated status reads of the
fixture leases with a fresh token each. It creates no leases and invents no backend
outcomes. Prints one JSON line: requests, successes (2xx), status counts, errors,
throughput_rps, p50_ms and p99_ms.

Examples:
  $ fred loadtest --target http://127.0.0.1:8080 --scenario rejection --count 5000 --duration 30s
  $ fred loadtest --target http://127.0.0.1:8080 --scenario status --fixtures leases.json --tenant-key-file tenant.hex`,
    )
    .action(async (o: LoadtestOptions) => {
      const plan = planFrom(o);
      say(
        `fred loadtest: ${plan.scenario} against ${plan.target.origin} (≤ ${plan.count} requests, ≤ ${o.duration})`,
      );
      printJson(await runLoad(plan));
    });
}
