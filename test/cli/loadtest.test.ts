import assert from "node:assert/strict";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { planFrom } from "../../src/cli/loadtest.ts";
import type { LoadResult } from "../../src/cli/loadtest-run.ts";
import { isFredError } from "../../src/core/errors.ts";
import { SECRETS, Stack } from "../provider/e2e/stack.ts";
import { type Launched, launchFred, pickFreePort, runFred } from "../support/index.ts";

/**
 * `fred loadtest` against one real stack (devnet, a mock backend, providerd). The
 * fixtures are made the way a provider makes them: `fred loadtest fixtures` creates
 * payload leases for the tenant key, and `fred loadtest record-callbacks` stands where
 * providerd's callback_base_url points, recording the backend's callbacks as it relays them.
 */
const stack = new Stack();
const MANIFEST = Buffer.from(
  JSON.stringify({ image: "docker.io/library/nginx:1.27", ports: { "80/tcp": {} } }),
);
let statusLease: string;
let leases: string[];
let recorder: Launched<{ url: string }>;
let fixtures: string;
let keyFile: string;

const DEFAULTS = {
  scenario: "rejection",
  count: "10",
  duration: "10s",
  concurrency: "1",
  bech32Prefix: "manifest",
};

type Result = LoadResult;

before(async () => {
  await stack.start(() => [{}]);
  fixtures = join(stack.dir, "fixtures.json");
  keyFile = join(stack.dir, "tenant.hex");
  const manifest = join(stack.dir, "app.json");
  writeFileSync(manifest, MANIFEST);
  const made = await runFred([
    "loadtest",
    "fixtures",
    "--leases",
    "3",
    "--sku",
    "docker-small",
    "--manifest",
    manifest,
    "--out",
    fixtures,
    "--tenant-key-out",
    keyFile,
    "--key-hex",
    stack.account("tenant1").private_key_hex,
    "--rpc",
    stack.devnet.rpc,
  ]);
  assert.equal(made.code, 0, made.stderr);
  leases = (JSON.parse(made.stdout) as { leases: string[] }).leases;
  // providerd's port is chosen first so the relay knows where to forward before it starts.
  stack.apiUrl = `http://127.0.0.1:${await pickFreePort()}`;
  recorder = await launchFred<{ url: string }>([
    "loadtest",
    "record-callbacks",
    "--forward",
    stack.apiUrl,
    "--out",
    fixtures,
  ]);
  stack.extraConfig = { callback_base_url: recorder.ready.url };
  stack.writeConfig();
  await stack.startProviderd();
  [statusLease] = (await stack.createLeases(1, "docker-small")) as [string];
  await stack.waitState([statusLease], "LEASE_STATE_ACTIVE");
});

after(async () => {
  await recorder?.stop();
  await stack.close();
});

async function loadtest(...args: string[]): Promise<Result> {
  const r = await runFred(["loadtest", "--target", stack.api, ...args]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Result;
}

const withKey = () => ["--fixtures", fixtures, "--tenant-key-file", keyFile, "--duration", "1m"];

function only(statuses: Record<string, number>, allowed: string[], what: string): void {
  for (const code of Object.keys(statuses))
    assert.ok(allowed.includes(code), `${what}: ${JSON.stringify(statuses)}`);
}

describe("fred loadtest", () => {
  it("fixtures: the leases are PENDING with the manifest as payload, the key file is 0600", async () => {
    assert.equal(leases.length, 3);
    const doc = JSON.parse(readFileSync(fixtures, "utf8")) as {
      leases: { lease_uuid: string; payload: string }[];
    };
    assert.deepEqual(
      doc.leases,
      leases.map((l) => ({ lease_uuid: l, payload: MANIFEST.toString("base64") })),
    );
    for (const l of leases) assert.equal(await stack.leaseState(l), "LEASE_STATE_PENDING");
    assert.equal(readFileSync(keyFile, "utf8").trim(), stack.account("tenant1").private_key_hex);
  });

  it("payload: one upload per lease is accepted (202), every repeat is refused as documented", async () => {
    const r = await loadtest("--scenario", "payload", ...withKey(), "--count", "12", "--concurrency", "3");
    assert.deepEqual(
      [r.requests, r.successes, r.errors, r.statuses["202"]],
      [12, 3, 0, 3],
      JSON.stringify(r),
    );
    // A duplicate while PENDING is 409; once provisioning made the lease ACTIVE it is 404 (not pending).
    only(r.statuses, ["202", "409", "404"], "payload");
    await stack.waitState(leases, "LEASE_STATE_ACTIVE");
  });

  it("connection: paced to one token per lease per second, so no token is refused as a replay", async () => {
    const r = await loadtest("--scenario", "connection", ...withKey(), "--count", "9", "--concurrency", "3");
    assert.deepEqual([r.requests, r.successes, r.errors], [9, 9, 0], JSON.stringify(r));
    assert.deepEqual(r.statuses, { "200": 9 });
  });

  it("callback: the recorded callbacks, re-signed, are acknowledged and change nothing", async () => {
    const doc = JSON.parse(readFileSync(fixtures, "utf8")) as { callbacks: { request_uri: string }[] };
    assert.ok(doc.callbacks.length >= leases.length, JSON.stringify(doc.callbacks));
    for (const cb of doc.callbacks) assert.match(cb.request_uri, /^\/callbacks\/provision\?operation_id=/);
    const r = await loadtest(
      "--scenario",
      "callback",
      "--fixtures",
      fixtures,
      "--callback-secret",
      SECRETS[0]!,
      "--count",
      "20",
    );
    assert.deepEqual([r.requests, r.successes, r.errors], [20, 20, 0], JSON.stringify(r));
    assert.deepEqual(r.statuses, { "200": 20 });
    for (const l of leases) assert.equal(await stack.leaseState(l), "LEASE_STATE_ACTIVE");
  });

  it("mixed: 40% uploads, 50% connections, 10% callbacks, each counted on its own", async () => {
    const r = await loadtest(
      "--scenario",
      "mixed",
      ...withKey(),
      "--callback-secret",
      SECRETS[0]!,
      "--count",
      "20",
      "--concurrency",
      "4",
    );
    assert.equal(r.requests, 20, JSON.stringify(r));
    const parts = r.parts ?? {};
    assert.deepEqual(
      [parts.payload?.requests, parts.connection?.requests, parts.callback?.requests],
      [8, 10, 2],
      JSON.stringify(r),
    );
    // The leases are ACTIVE now: uploads are refused, reads and acknowledgements succeed.
    assert.equal(parts.payload?.successes, 0);
    only(parts.payload?.statuses ?? {}, ["404", "409"], "mixed payload");
    assert.deepEqual(parts.connection?.statuses, { "200": 10 });
    assert.deepEqual(parts.callback?.statuses, { "200": 2 });
    assert.equal(r.successes, 12);
  });

  it("status: authenticated reads of a fixture lease, bounded by --count", async () => {
    const statusFixtures = join(stack.dir, "status-fixtures.json");
    writeFileSync(statusFixtures, JSON.stringify({ leases: [{ lease_uuid: statusLease }] }));
    const r = await loadtest(
      "--scenario",
      "status",
      "--fixtures",
      statusFixtures,
      "--tenant-key-file",
      keyFile,
      "--count",
      "40",
      "--concurrency",
      "4",
      "--duration",
      "2m",
    );
    assert.deepEqual([r.scenario, r.requests, r.successes, r.errors], ["status", 40, 40, 0]);
    assert.deepEqual(r.statuses, { "200": 40 });
    assert.ok(r.throughput_rps > 0 && r.p50_ms > 0 && r.p99_ms >= r.p50_ms, JSON.stringify(r));
  });

  it("rejection: an unauthenticated storm is refused (401/429) and measured", async () => {
    const r = await loadtest("--scenario", "rejection", "--count", "100", "--concurrency", "8");
    assert.deepEqual([r.requests, r.successes, r.errors], [100, 0, 0]);
    only(r.statuses, ["401", "429"], "rejection");
    const uploads = await loadtest("--scenario", "rejection", "--payload-size", "4096", "--count", "20");
    assert.deepEqual([uploads.requests, uploads.successes, uploads.errors], [20, 0, 0]);
    only(uploads.statuses, ["401", "429"], "rejection uploads");
  });

  it("refuses a target that is not loopback unless --remote, and unbounded flags", async () => {
    const remote = await runFred(["loadtest", "--target", "http://10.0.0.7:8080"]);
    assert.equal(remote.code, 1);
    assert.match(remote.stderr, /is not loopback; pass --remote/);
    const huge = await runFred(["loadtest", "--target", stack.api, "--count", "0"]);
    assert.equal(huge.code, 1);
    assert.match(huge.stderr, /--count must be an integer from 1 to 1000000/);
  });

  it("refuses missing fixtures, a readable key file, a short callback secret and a bad recorded callback", () => {
    // planFrom is everything the command does before its first request, so it runs in-process.
    const refused = (pattern: RegExp, flags: Record<string, string>) =>
      assert.throws(
        () => planFrom({ ...DEFAULTS, target: stack.api, ...flags }),
        (err: unknown) => isFredError(err, "ERR_USAGE") && pattern.test(err.message),
      );
    refused(/--scenario connection needs --fixtures <file>/, { scenario: "connection" });
    const loose = join(stack.dir, "loose.hex");
    writeFileSync(loose, stack.account("tenant1").private_key_hex);
    chmodSync(loose, 0o644);
    refused(/must be mode 0600/, { scenario: "connection", fixtures, tenantKeyFile: loose });
    refused(/--callback-secret must be the backend's HMAC secret, at least 32 bytes/, {
      scenario: "callback",
      fixtures,
      callbackSecret: "too-short",
    });
    const forged = join(stack.dir, "forged.json");
    const body = Buffer.from(JSON.stringify({ lease_uuid: leases[0], status: "success" })).toString("base64");
    writeFileSync(forged, JSON.stringify({ callbacks: [{ request_uri: "/callbacks/provision", body }] }));
    refused(/callbacks\[0\]\.request_uri must be a \/callbacks\/provision\?… URI/, {
      scenario: "callback",
      fixtures: forged,
      callbackSecret: SECRETS[0]!,
    });
    refused(/--payload-size applies only to --scenario rejection/, { scenario: "status", payloadSize: "10" });
    // The same checks hold with valid inputs: a plan is made, nothing is sent.
    const plan = planFrom({
      ...DEFAULTS,
      target: stack.api,
      scenario: "mixed",
      fixtures,
      tenantKeyFile: keyFile,
      callbackSecret: SECRETS[0]!,
    });
    assert.deepEqual([plan.leases.length, plan.callbacks.length > 0], [3, true]);
  });
});
