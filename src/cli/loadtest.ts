import type { Command } from "commander";
import { commandClock } from "../core/clock.ts";
import { parseDurationMs } from "../core/duration.ts";
import { FredError } from "../core/errors.ts";
import { isLoopbackHost } from "../core/host-port.ts";
import { callbackSecret, type Fixtures, readFixtures, readTenantKey } from "./loadtest-fixtures.ts";
import { registerFixturesCommand } from "./loadtest-make.ts";
import { registerRecordCommand } from "./loadtest-record.ts";
import { type LoadPlan, runLoad } from "./loadtest-run.ts";
import { SCENARIOS, type Scenario } from "./loadtest-scenarios.ts";
import { printJson, say } from "./output.ts";

/** Hard ceilings, whatever the flags say: a load test is bounded in count and time. */
const MAX_COUNT = 1_000_000;
const MAX_DURATION_MS = 10 * 60_000;
const MAX_CONCURRENCY = 256;
const MAX_PAYLOAD_SIZE = 8 * 1024 * 1024;

interface LoadtestOptions {
  target?: string;
  scenario: string;
  count: string;
  duration: string;
  concurrency: string;
  fixtures?: string;
  tenantKeyFile?: string;
  callbackSecret?: string;
  bech32Prefix: string;
  payloadSize?: string;
  remote?: boolean;
}

function usage(message: string): FredError {
  return new FredError("ERR_USAGE", message);
}

function bounded(text: string, name: string, max: number, min = 1): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw usage(`--${name} must be an integer from ${min} to ${max}`);
  return n;
}

function targetUrl(o: LoadtestOptions): URL {
  if (o.target === undefined) throw usage("--target <url> is required (providerd's base URL)");
  let target: URL;
  try {
    target = new URL(o.target);
  } catch {
    throw usage(`--target ${o.target} is not a URL`);
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") throw usage("--target must be http(s)://");
  if (!isLoopbackHost(target.hostname) && !o.remote) {
    throw usage(`--target ${target.origin} is not loopback; pass --remote to load a provider you operate`);
  }
  return target;
}

/** What each scenario needs from the fixtures, the key file and the callback secret. */
function inputsFor(
  scenario: Scenario,
  o: LoadtestOptions,
): Pick<LoadPlan, "leases" | "callbacks" | "tenantKey" | "callbackSecret"> {
  if (scenario === "rejection") return { leases: [], callbacks: [] };
  if (o.fixtures === undefined) throw usage(`--scenario ${scenario} needs --fixtures <file>`);
  const fx: Fixtures = readFixtures(o.fixtures);
  const needsKey = scenario !== "callback";
  const needsCallbacks = scenario === "callback" || (scenario === "mixed" && fx.callbacks.length > 0);
  if (scenario === "callback" && fx.callbacks.length === 0)
    throw usage(`--scenario callback needs "callbacks" entries in ${o.fixtures}`);
  if ((scenario === "status" || scenario === "connection") && fx.leases.length === 0)
    throw usage(`--scenario ${scenario} needs at least one entry in "leases" of ${o.fixtures}`);
  if ((scenario === "payload" || scenario === "mixed") && !fx.leases.some((l) => l.payload !== undefined))
    throw usage(`--scenario ${scenario} needs leases with a base64 "payload" in ${o.fixtures}`);
  if (needsKey && o.tenantKeyFile === undefined)
    throw usage(`--scenario ${scenario} needs --tenant-key-file <file> (the leases' tenant key)`);
  if (needsCallbacks && o.callbackSecret === undefined)
    throw usage(`the recorded callbacks need --callback-secret <the backend's HMAC secret>`);
  return {
    leases: fx.leases,
    callbacks: needsCallbacks ? fx.callbacks : [],
    ...(needsKey ? { tenantKey: readTenantKey(o.tenantKeyFile as string) } : {}),
    ...(needsCallbacks ? { callbackSecret: callbackSecret(o.callbackSecret as string) } : {}),
  };
}

export function planFrom(o: LoadtestOptions): LoadPlan {
  const target = targetUrl(o);
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
  if (o.payloadSize !== undefined && scenario !== "rejection")
    throw usage("--payload-size applies only to --scenario rejection");
  const count = bounded(o.count, "count", MAX_COUNT);
  const concurrency = bounded(o.concurrency, "concurrency", MAX_CONCURRENCY);
  return {
    target,
    scenario,
    count,
    durationMs,
    concurrency,
    clock: commandClock,
    bech32Prefix: o.bech32Prefix,
    ...(o.payloadSize === undefined
      ? {}
      : { payloadSize: bounded(o.payloadSize, "payload-size", MAX_PAYLOAD_SIZE, 0) }),
    ...inputsFor(scenario, o),
  };
}

export function registerLoadtestCommand(program: Command): void {
  const loadtest = program
    .command("loadtest")
    .description("Send a bounded load scenario to a running providerd and print throughput and latency")
    .option("--target <url>", "providerd's base URL (loopback unless --remote); required")
    .option("--scenario <name>", `one of ${SCENARIOS.join(", ")}`, "rejection")
    .option("--count <n>", "stop after this many requests", "1000")
    .option("--duration <d>", "stop after this long (at most 10m)", "10s")
    .option("--concurrency <n>", "requests in flight at once", "8")
    .option(
      "--fixtures <file>",
      '{"leases":[{"lease_uuid","payload"?}],"callbacks"?:[{"request_uri","body"}]} (fred loadtest fixtures makes one)',
    )
    .option("--tenant-key-file <file>", "the leases' tenant secp256k1 private key, 64 hex digits, mode 0600")
    .option("--callback-secret <secret>", "callback, mixed: the recording backend's HMAC secret (≥ 32 bytes)")
    .option("--bech32-prefix <hrp>", "address prefix of the tenant", "manifest")
    .option("--payload-size <bytes>", "rejection only: send unauthenticated uploads of this size")
    .option("--remote", "allow a target that is not on loopback (a provider you operate)")
    .addHelpText(
      "after",
      `
Scenarios (each creates no leases and invents no backend outcome):
  rejection   unauthenticated connection reads (or uploads with --payload-size) for random
              leases: a refusal storm, every answer should be 401 or 429
  status      authenticated status reads of the fixture leases
  connection  authenticated connection reads (replay-protected), at most one per lease
              per second: give a pool of leases for more throughput
  payload     uploads of each fixture lease's payload (the exact manifest whose SHA-256 is
              its meta_hash): the first is accepted (202), repeats measure the refusals
  callback    the recorded callbacks, re-signed with --callback-secret over their exact
              URI and body; replaying a settled one measures acknowledgement
  mixed       40% payload / 60% connection, or 40/50/10 with callbacks in the fixtures
2xx answers are successes; other statuses are counted per code; redirects are not followed.
Prints one JSON line: requests, successes, statuses, errors, duration_s, throughput_rps,
p50_ms and p99_ms (and "parts", the same per request kind, for mixed).

Examples:
  $ fred loadtest --target http://127.0.0.1:8080 --scenario rejection --count 5000 --duration 30s
  $ fred loadtest --target http://127.0.0.1:8080 --scenario connection --fixtures fixtures.json --tenant-key-file tenant.hex --duration 30s --concurrency 10
  $ fred loadtest --target http://127.0.0.1:8080 --scenario callback --fixtures fixtures.json --callback-secret "$BACKEND_SECRET"`,
    )
    .action(async (o: LoadtestOptions) => {
      const plan = planFrom(o);
      say(
        `fred loadtest: ${plan.scenario} against ${plan.target.origin} (≤ ${plan.count} requests, ≤ ${o.duration})`,
      );
      printJson(await runLoad(plan));
    });
  registerFixturesCommand(loadtest);
  registerRecordCommand(loadtest);
}
