import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { restoreSource } from "../../src/cli/lease/journey.ts";
import { connectionUrls, newLines } from "../../src/cli/lease/reads.ts";
import { refusal, TenantApi } from "../../src/cli/lease/tenant-api.ts";
import { verdictOf } from "../../src/cli/lease/wait.ts";
import { bankBalance } from "../provider/billing/harness.ts";
import { mockSkus, Stack } from "../provider/e2e/stack.ts";
import { FRED_BIN, runFred } from "../support/index.ts";

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
      // providerd routes docker-large to the mock backend, which does not serve it: a lease
      // that passes every check the CLI can make and is still refused by the backend.
      s.backendOverrides = [{ skus: [s.sku("docker-small"), s.sku("docker-medium"), s.sku("docker-large")] }];
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

  it("uses the connection's protocol for bound ports and leaves out the scheme's default port", () => {
    const urls = connectionUrls({
      host: "app.example.com",
      protocol: "https",
      ports: { "443/tcp": { host_ip: "0.0.0.0", host_port: 443 }, "8443/tcp": { host_port: 8443 } },
      services: { api: { protocol: "http", ports: { "80/tcp": { host_port: 80 } } } },
    });
    assert.deepEqual(urls.sort(), [
      "http://app.example.com/",
      "https://app.example.com/",
      "https://app.example.com:8443/",
    ]);
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

/** `fred lease deploy` of the plain manifest on docker-small, as tenant1. */
const deploySmall = () =>
  fred(["lease", "deploy", "--sku", "docker-small", "--manifest", manifest, ...as("tenant1")]);

describe("fred lease against a real stack", () => {
  let lease = "";

  it("deploy creates, uploads and waits: one JSON line once the lease is ACTIVE and ready", async () => {
    const r = await deploySmall();
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

  it("reads are a readable view on a terminal (or --output text) and JSON when piped", async () => {
    // Under a pseudo-terminal (util-linux script), with no --output: the text view.
    const args = ["lease", "status", lease, ...as("tenant1")];
    const quoted = [process.execPath, FRED_BIN, ...args].map((a) => `'${a}'`).join(" ");
    const tty = spawnSync("script", ["-qec", quoted, "/dev/null"], { encoding: "utf8" });
    assert.equal(tty.status, 0, tty.stdout);
    assert.match(tty.stdout, /^state\s+active\r?$/m);
    assert.match(tty.stdout, /^provision\s+ready\r?$/m);
    assert.doesNotMatch(tty.stdout, /"lease_uuid"/);

    const logs = await runFred(["lease", "logs", lease, "--tail", "5", "--output", "text", ...as("tenant1")]);
    assert.equal(logs.code, 0, logs.stderr);
    const lines = logs.stdout.trim().split("\n");
    assert.ok(lines.length >= 1, logs.stdout);
    for (const line of lines) assert.match(line, /^[a-z0-9-]+\/\d+ \| /, line);

    const releases = await runFred(["lease", "releases", lease, "--output", "text", ...as("tenant1")]);
    assert.match(releases.stdout, /^VERSION\s+STATUS\s+IMAGE\s+CREATED\nv1\s+\w+/m);
    const list = await runFred(["lease", "list", "--output", "text", ...as("tenant1")]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^LEASE\s+STATE\s+STATUS\s+SKU\s+AGE\s+URL\s+RESTORABLE$/m);
    assert.match(list.stdout, new RegExp(`^${lease}\\s+active\\s+ready\\s+docker-small\\s+\\d+[smhd]`, "m"));

    const bad = await runFred(["lease", "status", lease, "--output", "yaml", ...as("tenant1")]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--output must be text or json/);
    // Piped and without --output: the JSON document, as before.
    const piped = await fred(args);
    assert.equal(piped.json.state, "LEASE_STATE_ACTIVE");
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

  it("close returns after the committed close tx with the new state; events --until-ended then ends", async () => {
    // A close sends no frame when the workload keeps no data: the stream must still end. The
    // watcher is bounded (coreutils timeout, exit 124) so a regression fails instead of hanging.
    const events = spawn(
      "timeout",
      ["60", process.execPath, FRED_BIN, "lease", "events", lease, "--until-ended", ...as("tenant1")],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let watcherErr = "";
    events.stderr.setEncoding("utf8").on("data", (d: string) => {
      watcherErr += d;
    });
    events.stdout.resume();
    const exited = once(events, "close") as Promise<[number | null]>;
    const r = await fred(["lease", "close", lease, ...as("tenant1")]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.lease_uuid, lease);
    assert.equal(r.json.state, "LEASE_STATE_CLOSED");
    assert.match(String(r.json.tx_hash), /^[0-9A-F]{64}$/);
    assert.equal(typeof r.json.height, "number");
    const [code] = await exited;
    assert.equal(code, 0, `fred lease events --until-ended exited ${code}: ${watcherErr}`);
    assert.match(watcherErr, new RegExp(`lease ${lease} is closed`));
  });

  const leaseCount = async () => (await stack.tenant.leasesByTenant(stack.tenant.address)).length;

  it("a deploy whose manifest, SKU or provider is wrong sends nothing and names every problem", async () => {
    const before = await leaseCount();
    const broken = join(stack.dir, "broken.json");
    writeFileSync(broken, "{not json");
    const stackManifest = join(stack.dir, "stack.json");
    writeFileSync(
      stackManifest,
      JSON.stringify({
        services: { web: { image: "docker.io/library/nginx:1.27" }, db: { image: "redis:7" } },
      }),
    );
    const foreign = join(stack.dir, "foreign.json");
    writeFileSync(foreign, JSON.stringify({ image: "quay.io/acme/app:1" }));
    const deploy = (sku: string[], file: string, extra: string[] = []) =>
      fred([
        "lease",
        "deploy",
        ...sku.flatMap((x) => ["--sku", x]),
        "--manifest",
        file,
        ...as("tenant1"),
        ...extra,
      ]);

    const json = await deploy(["docker-small"], broken);
    assert.equal(json.code, 1);
    assert.match(json.stderr, /manifest \(root\): .*JSON/i);
    assert.match(json.stderr, /nothing was sent to the chain/);

    const typo = await deploy(["docker-smal"], manifest);
    assert.equal(typo.code, 1);
    assert.match(typo.stderr, /--sku docker-smal: no active SKU has that name; did you mean docker-small\?/);
    assert.match(typo.stderr, /active: .*docker-medium/);

    const unnamed = await deploy(["docker-small"], stackManifest);
    assert.equal(unnamed.code, 1);
    assert.match(unnamed.stderr, /manifest \/services\/web: .*no matching lease item/);
    assert.match(unnamed.stderr, /try --sku docker-small:1:web --sku docker-small:1:db/);

    const registry = await deploy(["docker-small"], foreign);
    assert.equal(registry.code, 1);
    assert.match(
      registry.stderr,
      /image registry quay\.io is not allowed by this provider \(allowed: docker\.io, ghcr\.io\)/,
    );

    const unreachable = await deploy(["docker-small"], manifest, ["--provider-url", "http://127.0.0.1:9"]);
    assert.equal(unreachable.code, 1);
    assert.match(
      unreachable.stderr,
      /cannot reach the provider at http:\/\/127\.0\.0\.1:9.*nothing was sent to the chain/,
    );

    assert.equal(await leaseCount(), before, "no refused deploy created a lease");
    for (const r of [json, typo, unnamed, registry, unreachable])
      assert.equal(r.stdout, "", "stdout stays empty");
  });

  it("a lease the backend rejects ends deploy at once with the reason, exit 1; status and provision say why", async () => {
    const r = await fred([
      "lease",
      "deploy",
      "--sku",
      "docker-large",
      "--manifest",
      manifest,
      ...as("tenant1"),
    ]);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.json.state, "LEASE_STATE_REJECTED");
    assert.match(r.stderr, /ended \(LEASE_STATE_REJECTED\): Rejected — invalid SKU/);
    assert.doesNotMatch(r.stderr, /did not settle/);
    const rejected = String(r.json.lease_uuid);
    const status = await fred(["lease", "status", rejected, ...as("tenant1")]);
    assert.equal(status.code, 0, status.stderr);
    assert.equal(status.json.provision_status, "failed");
    assert.equal(status.json.reason, "Rejected");
    assert.equal(status.json.message, "invalid SKU");
    // GET /provision answers after a rejection too, as the reference's contract says.
    const api = new TenantApi(stack.api, Buffer.from(stack.account("tenant1").private_key_hex, "hex"));
    const provision = await api.lease(rejected, "provision");
    assert.equal(provision.status, 200);
    assert.deepEqual(
      [provision.body.status, provision.body.reason, provision.body.message, provision.body.fail_count],
      ["failed", "Rejected", "invalid SKU", 0],
    );
  });

  it("a create the chain would fail (no credit) is refused in simulation: no tx, no fee", async () => {
    // The faucet has coins but no credit account: MsgCreateLease fails to execute.
    const faucet = stack.account("faucet").address;
    const before = await bankBalance(stack.devnet.rpc, faucet, "umfx");
    const r = await fred(["lease", "create", "--sku", "docker-small", ...as("faucet")]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /refused the transaction in simulation; nothing was broadcast: .*credit account not found/,
    );
    assert.match(r.stderr, new RegExp(`fred chain credit fund --tenant ${faucet}`));
    assert.doesNotMatch(r.stderr, /broadcast [0-9A-F]{64}|gas wanted/);
    assert.equal(await bankBalance(stack.devnet.rpc, faucet, "umfx"), before, "no fee was paid");
  });

  it("cancel ends a PENDING lease; an active, ended, foreign or malformed one is refused", async () => {
    const created = await fred([
      "lease",
      "create",
      "--sku",
      "docker-small",
      "--manifest",
      manifest,
      ...as("tenant1"),
    ]);
    assert.equal(created.code, 0, created.stderr);
    const pending = String(created.json.lease_uuid);
    const foreign = await fred(["lease", "cancel", pending, ...as("tenant2")]);
    assert.equal(foreign.code, 1);
    assert.match(foreign.stderr, /belongs to another tenant/);
    const r = await fred(["lease", "cancel", pending, ...as("tenant1")]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.state, "LEASE_STATE_REJECTED");
    assert.match(String(r.json.tx_hash), /^[0-9A-F]{64}$/);
    assert.equal(await stack.leaseState(pending), "LEASE_STATE_REJECTED");
    const again = await fred(["lease", "cancel", pending, ...as("tenant1")]);
    assert.equal(again.code, 1);
    assert.match(
      again.stderr,
      /already ended \(LEASE_STATE_REJECTED\); only a PENDING lease can be cancelled/,
    );
    const active = await fred(["lease", "cancel", lease, ...as("tenant1")]);
    assert.equal(active.code, 1);
    assert.match(active.stderr, /(is active: end it with fred lease close|already ended)/);
    const bad = await fred(["lease", "cancel", "nope", ...as("tenant1")]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /canonical lowercase UUID/);
  });

  it("restore refuses a source that is not restorable before creating anything", async () => {
    const before = await leaseCount();
    const running = await deploySmall();
    assert.equal(running.code, 0, running.stderr);
    const active = String(running.json.lease_uuid);
    const r = await fred(["lease", "restore", active, ...as("tenant1")]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`lease ${active} is active: close it first`));
    const foreign = await fred(["lease", "restore", active, ...as("tenant2")]);
    assert.equal(foreign.code, 1);
    assert.match(foreign.stderr, /belongs to another tenant/);
    assert.equal(await leaseCount(), before + 1, "only the deploy created a lease");
  });

  it("update refuses a broken manifest before sending it", async () => {
    const broken = join(stack.dir, "broken-update.json");
    writeFileSync(broken, JSON.stringify({ image: "nginx:1", bogus: true }));
    const r = await fred(["lease", "update", lease, "--manifest", broken, ...as("tenant1")]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /manifest .*bogus/);
    assert.match(r.stderr, /nothing was sent to the provider/);
  });

  it("an update that fails and rolls back exits 1; the next good one exits 0", async () => {
    const deployed = await deploySmall();
    assert.equal(deployed.code, 0, deployed.stderr);
    const uuid = String(deployed.json.lease_uuid);
    const failing = join(stack.dir, "failing.json");
    writeFileSync(failing, JSON.stringify({ image: "docker.io/library/nginx:fail" }));
    const bad = await fred(["lease", "update", uuid, "--manifest", failing, ...as("tenant1")]);
    assert.equal(bad.code, 1, bad.stderr);
    assert.equal(bad.json.provision_status, "ready", "the previous release runs again");
    assert.match(bad.stderr, /update of lease .* failed and was rolled back: UpdateFailed/);
    const good = await fred(["lease", "update", uuid, "--manifest", manifest, ...as("tenant1")]);
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stderr, /is ready/);
  });
});
