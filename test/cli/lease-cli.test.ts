import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { restoreSource } from "../../src/cli/lease/journey.ts";
import { connectionUrls, newLines } from "../../src/cli/lease/reads.ts";
import { refusal } from "../../src/cli/lease/tenant-api.ts";
import { verdictOf } from "../../src/cli/lease/wait.ts";
import { mockSkus, Stack } from "../provider/e2e/stack.ts";
import { runFred } from "../support/index.ts";

/**
 * `fred lease …` as a tenant runs it: real CLI processes against a devnet, a mock backend
 * that provisions at once and providerd. Each command's stdout is one JSON line; the
 * tests read only what a user sees (stdout, stderr, exit code) and the chain.
 */
const stack = new Stack();
let manifest: string;
let home: string;

before(async () => {
  await stack.start(
    (s) => [
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small"), s.sku("docker-medium")),
        MOCK_BACKEND_DELAY: "0s",
      },
    ],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small"), s.sku("docker-medium")] }];
    },
  );
  await stack.startProviderd();
  home = join(stack.dir, "devnet");
  manifest = join(stack.dir, "app.json");
  writeFileSync(manifest, JSON.stringify({ image: "docker.io/library/nginx:1.27", ports: { "80/tcp": {} } }));
});

after(async () => {
  await stack.close();
});

const as = (tenant: string) => [
  "--from",
  tenant,
  "--home",
  home,
  "--rpc",
  stack.devnet.rpc,
  "--provider-url",
  stack.api,
];

async function fred(args: string[]) {
  const r = await runFred(args);
  let json: Record<string, unknown> | unknown[] | undefined;
  const line = r.stdout.trim();
  if (line !== "") json = JSON.parse(line.split("\n").at(-1) as string) as Record<string, unknown>;
  return { ...r, json: json as Record<string, unknown> };
}

describe("fred lease (pure parts)", () => {
  it("lists an https URL per fqdn and an http URL per bound TCP port, in stacks and instances", () => {
    const urls = connectionUrls({
      host: "10.0.0.5",
      fqdn: "web.apps.example.com",
      ports: {
        "80/tcp": { host_ip: "0.0.0.0", host_port: 32768 },
        "53/udp": { host_ip: "0.0.0.0", host_port: 1 },
      },
      services: {
        db: { instances: [{ ports: { "5432/tcp": { host_ip: "127.0.0.1", host_port: 40000 } } }] },
      },
    });
    assert.deepEqual(urls.sort(), [
      "http://10.0.0.5:32768/",
      "http://127.0.0.1:40000/",
      "https://web.apps.example.com/",
    ]);
    assert.deepEqual(connectionUrls(undefined), []);
  });

  it("prints only the log lines after the last one already printed", () => {
    assert.deepEqual(newLines([], ["a", "b"]), ["a", "b"]);
    assert.deepEqual(newLines(["a", "b"], ["a", "b", "c"]), ["c"]);
    assert.deepEqual(newLines(["x"], ["a", "b"]), ["a", "b"]);
    assert.deepEqual(newLines(["a", "b"], ["a", "b"]), []);
  });

  it("says ready only once the chain shows ACTIVE when asked to", () => {
    assert.equal(verdictOf({ state: "LEASE_STATE_PENDING", provision_status: "ready" }, true), "waiting");
    assert.equal(verdictOf({ state: "LEASE_STATE_PENDING", provision_status: "ready" }, false), "ready");
    assert.equal(verdictOf({ state: "LEASE_STATE_ACTIVE", provision_status: "ready" }, true), "ready");
    assert.equal(verdictOf({ state: "LEASE_STATE_PENDING", provision_status: "failed" }, true), "failed");
    assert.equal(verdictOf({ state: "LEASE_STATE_REJECTED" }, true), "ended");
    assert.equal(
      verdictOf({ state: "LEASE_STATE_PENDING", provision_status: "provisioning" }, true),
      "waiting",
    );
  });

  it("restore takes its source as the argument or as the --from value that is a canonical UUID", () => {
    const a = "0b9a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
    const b = "1b9a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
    assert.deepEqual(restoreSource(a, ["tenant1"]), { source: a, account: "tenant1" });
    assert.deepEqual(restoreSource(undefined, [a, "tenant1"]), { source: a, account: "tenant1" });
    assert.deepEqual(restoreSource(undefined, ["tenant1", a]), { source: a, account: "tenant1" });
    assert.deepEqual(restoreSource(undefined, [a]), { source: a, account: undefined });
    assert.deepEqual(restoreSource(a, undefined), { source: a, account: undefined });
    assert.throws(() => restoreSource(a, [b]), /source lease once/);
    assert.throws(() => restoreSource(undefined, [a, b]), /source lease once/);
    assert.throws(() => restoreSource(undefined, ["tenant1", "tenant2"]), /one dev account/);
    assert.throws(() => restoreSource(undefined, ["tenant1"]), /name the lease to restore/);
    // An uppercase UUID is not canonical: as an argument it is refused, as --from it is a name.
    assert.throws(() => restoreSource(a.toUpperCase(), undefined), /canonical lowercase UUID/);
    assert.deepEqual(restoreSource(a, [a.toUpperCase()]), { source: a, account: a.toUpperCase() });
  });

  it("turns a refusal into the API's text, reason and a hint", () => {
    const err = refusal(422, { error: "restore refused", code: 422, reason: "demote_exceeds_tier" });
    assert.match(err.message, /^422 restore refused \(demote_exceeds_tier\): .*larger --sku/);
    assert.match(refusal(403, { error: "forbidden", code: 403 }).message, /another tenant/);
    assert.equal(refusal(503, {}, true).retryable, true);
  });
});

describe("fred lease against a real stack", () => {
  let lease = "";

  it("deploy creates, uploads and waits: one JSON line once the lease is ACTIVE and ready", async () => {
    const r = await fred([
      "lease",
      "deploy",
      "--sku",
      "docker-small",
      "--manifest",
      manifest,
      ...as("tenant1"),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.state, "LEASE_STATE_ACTIVE");
    assert.equal(r.json.provision_status, "ready");
    assert.match(String(r.json.lease_uuid), /^[0-9a-f-]{36}$/);
    assert.match(r.stderr, /uploaded .*app\.json/);
    lease = String(r.json.lease_uuid);
    assert.equal(await stack.leaseState(lease), "LEASE_STATE_ACTIVE");
  });

  it("status, connect, logs and releases print the API's body as it is", async () => {
    const status = await fred(["lease", "status", lease, ...as("tenant1")]);
    assert.equal(status.code, 0, status.stderr);
    assert.equal(status.json.state, "LEASE_STATE_ACTIVE");
    assert.equal(status.json.payload_received, true);
    // fred lease status asks for our extra keys (include=credit,terminal_budget).
    assert.deepEqual(status.json.terminal_budget, { verdict: "retry", consecutive_failures: 0 });

    const connect = await fred(["lease", "connect", lease, ...as("tenant1")]);
    assert.equal(connect.code, 0, connect.stderr);
    assert.equal(connect.json.lease_uuid, lease);
    assert.equal(typeof connect.json.connection, "object");

    const logs = await fred(["lease", "logs", lease, "--tail", "5", ...as("tenant1")]);
    assert.equal(logs.code, 0, logs.stderr);
    assert.equal(typeof logs.json.logs, "object");

    const releases = await fred(["lease", "releases", lease, ...as("tenant1")]);
    assert.equal(releases.code, 0, releases.stderr);
    assert.ok(Array.isArray(releases.json.releases));
    assert.ok((releases.json.releases as unknown[]).length >= 1);
  });

  it("a key from a fred keys keyring signs as well as the dev account", async () => {
    const dir = join(stack.dir, "tenant-keyring");
    const added = await runFred(
      ["keys", "add", "me", "--keyring-dir", dir, "--keyring-backend", "test", "--mnemonic", "-"],
      {
        input: stack.account("tenant1").mnemonic,
      },
    );
    assert.equal(added.code, 0, added.stderr);
    const flags = ["--key-name", "me", "--keyring-dir", dir, "--keyring-backend", "test"];
    const r = await fred([
      "lease",
      "status",
      lease,
      ...flags,
      "--rpc",
      stack.devnet.rpc,
      "--provider-url",
      stack.api,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.tenant, stack.account("tenant1").address);
    const both = await fred([
      "lease",
      "status",
      lease,
      ...flags,
      "--from",
      "tenant1",
      "--home",
      home,
      "--provider-url",
      stack.api,
    ]);
    assert.equal(both.code, 1);
    assert.match(both.stderr, /give exactly one key/);
  });

  it("another tenant's key is refused with the API's 403 and a hint, exit 1", async () => {
    const r = await fred(["lease", "status", lease, ...as("tenant2")]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /403 .*another tenant/);
  });

  it("bad input is refused before anything is sent", async () => {
    const badUuid = await fred(["lease", "status", "not-a-uuid", ...as("tenant1")]);
    assert.equal(badUuid.code, 1);
    assert.match(badUuid.stderr, /canonical lowercase UUID/);
    const noKey = await fred(["lease", "status", lease, "--provider-url", stack.api]);
    assert.equal(noKey.code, 1);
    assert.match(noKey.stderr, /give exactly one key/);
    const missing = await fred([
      "lease",
      "deploy",
      "--sku",
      "docker-small",
      "--manifest",
      "/nonexistent.json",
      ...as("tenant1"),
    ]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot read manifest/);
    const tail = await fred(["lease", "logs", lease, "--tail", "0", ...as("tenant1")]);
    assert.equal(tail.code, 1);
    assert.match(tail.stderr, /--tail must be 1 to 10000/);
    const url = await fred(["lease", "status", lease, ...as("tenant1"), "--provider-url", "ftp://x"]);
    assert.equal(url.code, 1);
    assert.match(url.stderr, /http or https URL/);
  });

  it("restore reads --from <source-uuid> beside --from <account>; ambiguous forms are refused", async () => {
    const unknown = "0b9a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
    for (const form of [
      ["lease", "restore", "--from", unknown, ...as("tenant1")],
      ["lease", "restore", unknown, ...as("tenant1")],
    ]) {
      const r = await fred(form);
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`the chain has no lease ${unknown}`), form.join(" "));
    }
    const twice = await fred(["lease", "restore", lease, "--from", unknown, ...as("tenant1")]);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /give the source lease once/);
    const none = await fred(["lease", "restore", ...as("tenant1")]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /name the lease to restore/);
    const uuidAsAccount = await fred(["lease", "status", lease, ...as(unknown)]);
    assert.equal(uuidAsAccount.code, 1);
    assert.match(uuidAsAccount.stderr, /is a UUID, not a dev account name/);
    const upper = await fred(["lease", "restore", lease, ...as(unknown.toUpperCase())]);
    assert.equal(upper.code, 1);
    assert.match(upper.stderr, /is a UUID, not a dev account name/);
  });

  it("list shows the tenant's leases with the provider's status", async () => {
    const r = await fred(["lease", "list", ...as("tenant1")]);
    assert.equal(r.code, 0, r.stderr);
    const mine = (r.json as unknown as Record<string, unknown>[]).find((l) => l.uuid === lease);
    assert.equal(mine?.state, "LEASE_STATE_ACTIVE");
    assert.equal(mine?.provision_status, "ready");
  });

  it("close returns after the committed close tx with the new state", async () => {
    const r = await fred(["lease", "close", lease, ...as("tenant1")]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.lease_uuid, lease);
    assert.equal(r.json.state, "LEASE_STATE_CLOSED");
    assert.match(String(r.json.tx_hash), /^[0-9A-F]{64}$/);
    assert.equal(typeof r.json.height, "number");
  });

  it("deploy of a manifest the backend refuses exits 1 with the failure", async () => {
    const bad = join(stack.dir, "bad.json");
    writeFileSync(bad, "{not json");
    const r = await fred([
      "lease",
      "deploy",
      "--sku",
      "docker-small",
      "--manifest",
      bad,
      "--timeout",
      "60s",
      ...as("tenant1"),
    ]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /failed|ended/);
  });
});
