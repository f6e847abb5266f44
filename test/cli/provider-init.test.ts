import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { availableParallelism, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import { loadDockerBackendConfig } from "../../src/backend/docker/config.ts";
import { type Devnet, devnet, runFred } from "../support/index.ts";

/**
 * `fred provider init` against a real devnet, whose `provider` account is on x/sku's
 * allowed list (as an operator the authority admitted) and whose tenants are not.
 */
describe("fred provider init", () => {
  let dn: Devnet;
  const work = mkdtempSync(join(tmpdir(), "fred-provider-init-"));
  const key = () => ["--from", "provider", "--home", dn.home, "--rpc", dn.rpc];
  before(async () => {
    dn = await devnet({ tenants: 1 });
  });
  after(async () => {
    await dn?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const init = (out: string, ...args: string[]) =>
    runFred(["provider", "init", "--out", join(work, out), ...args]);

  it("registers a missing SKU, writes 0600 files whose providerd config passes --check-config", async () => {
    const r = await init(
      "one",
      "--provider-uuid",
      dn.keys.provider_uuid,
      "--sku",
      "docker-small:360000upwr:0.5:512",
      "--sku",
      "docker-xl:2880000upwr:2:4096:10240",
      "--state-dir",
      join(work, "state"),
      ...key(),
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.provider_uuid, dn.keys.provider_uuid);
    assert.deepEqual(out.registered, { provider: false, skus: ["docker-xl"] });
    const small = dn.keys.skus.find((s) => s.name === "docker-small")?.uuid;
    assert.equal(out.skus[0].uuid, small);
    const xl = out.skus[1].uuid as string;
    assert.match(
      r.stderr,
      /1\. the backend[\s\S]*fred backend docker -c [\s\S]*2\. [\s\S]*fred placement init [\s\S]*3\. [\s\S]*fred providerd --check-config --online/,
    );

    for (const name of ["providerd.yaml", "docker-backend.yaml", "backend-hmac.secret"]) {
      const path = join(work, "one", name);
      assert.equal(statSync(path).mode & 0o777, 0o600, name);
    }
    const secret = readFileSync(join(work, "one", "backend-hmac.secret"), "utf8").trim();
    assert.match(secret, /^[0-9a-f]{64}$/);
    const providerd = parse(readFileSync(join(work, "one", "providerd.yaml"), "utf8"));
    assert.equal(providerd.backends[0].hmac_secret, secret);
    assert.deepEqual(providerd.backends[0].skus, [small, xl]);
    assert.equal(providerd.chain_id, dn.keys.chain_id);
    assert.equal(providerd.placement_snapshot_dir, join(work, "state", "backups"));
    const check = await runFred(["providerd", "--check-config", "-c", join(work, "one", "providerd.yaml")]);
    assert.equal(check.code, 0, check.stderr);
    const backend = loadDockerBackendConfig(join(work, "one", "docker-backend.yaml"), {});
    assert.equal(backend.callbackSecret, secret);
    // Sized from this machine: every core, memory less a reserve, some disk.
    assert.equal(backend.totalCpuCores, availableParallelism());
    assert.ok(
      backend.totalMemoryMb > 0 && backend.totalMemoryMb < totalmem() / 2 ** 20,
      String(backend.totalMemoryMb),
    );
    assert.ok(backend.totalDiskMb > 0, String(backend.totalDiskMb));

    const listed = await runFred([
      "chain",
      "sku",
      "list",
      "--provider",
      dn.keys.provider_uuid,
      "--rpc",
      dn.rpc,
    ]);
    const onChain = JSON.parse(listed.stdout).find((s: { uuid: string }) => s.uuid === xl);
    assert.equal(onChain?.name, "docker-xl");
    assert.deepEqual(onChain?.base_price, { denom: "upwr", amount: "2880000" });

    // A second run into the same directory names the file it will not overwrite.
    const before = readFileSync(join(work, "one", "providerd.yaml"), "utf8");
    const again = await init(
      "one",
      "--provider-uuid",
      dn.keys.provider_uuid,
      "--sku",
      "docker-small:360000upwr:0.5:512",
      ...key(),
    );
    assert.equal(again.code, 1);
    assert.match(again.stderr, /refusing to overwrite .*providerd\.yaml/);
    assert.equal(readFileSync(join(work, "one", "providerd.yaml"), "utf8"), before);
  });

  it("registers a new provider record when no --provider-uuid is given", async () => {
    const r = await init(
      "two",
      "--api-url",
      "https://fred.example.com",
      "--sku",
      "tiny:3600upwr:0.25:256",
      ...key(),
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.notEqual(out.provider_uuid, dn.keys.provider_uuid);
    assert.deepEqual(out.registered, { provider: true, skus: ["tiny"] });
    const show = await runFred(["chain", "provider", "show", out.provider_uuid, "--rpc", dn.rpc]);
    assert.equal(JSON.parse(show.stdout).api_url, "https://fred.example.com");
  });

  it("a key that is not the authority is refused precisely, and nothing is written", async () => {
    const r = await init(
      "three",
      "--api-url",
      "https://fred.example.com",
      "--sku",
      "tiny:3600upwr:0.25:256",
      "--from",
      "tenant1",
      "--home",
      dn.home,
      "--rpc",
      dn.rpc,
    );
    assert.equal(r.code, 1);
    const provider = dn.account("provider").address;
    assert.match(
      r.stderr,
      new RegExp(
        `may not register a provider: x/sku accepts .*allowed_list: ${provider}\\).*--as-authority.*--skip-register --provider-uuid`,
      ),
    );
    assert.doesNotMatch(r.stderr, /broadcast/, "refused before any transaction");
    assert.equal(existsSync(join(work, "three")), false);

    // Claiming to be the authority: the chain has the last word, and init relays it.
    const claimed = await init(
      "three",
      "--as-authority",
      "--sku",
      "tiny:3600upwr:0.25:256",
      "--from",
      "tenant1",
      "--home",
      dn.home,
      "--rpc",
      dn.rpc,
    );
    assert.equal(claimed.code, 1);
    assert.match(claimed.stderr, /may not register a provider: .*the chain said: .*unauthorized/);
    assert.equal(existsSync(join(work, "three")), false);
  });

  it("--skip-register only writes files, and names a SKU the chain lacks", async () => {
    const skip = ["--skip-register", "--provider-uuid", dn.keys.provider_uuid];
    const host = [
      ...["--host-cpu-cores", "1.5", "--host-memory-mb", "512", "--host-disk-mb", "2048"],
      ...["--callback-base-url", "https://10.0.0.2:9443"],
      ...["--backend-url", "unix:/run/fred/docker-backend.sock"],
    ];
    const r = await init("four", ...skip, "--sku", "docker-medium:720000upwr:1:1024", ...host, ...key());
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout).registered, { provider: false, skus: [] });
    const backend = loadDockerBackendConfig(join(work, "four", "docker-backend.yaml"), {});
    assert.deepEqual([backend.totalCpuCores, backend.totalMemoryMb, backend.totalDiskMb], [1.5, 512, 2048]);
    const providerd = parse(readFileSync(join(work, "four", "providerd.yaml"), "utf8"));
    assert.equal(providerd.api_listen_addr, ":9443");
    assert.equal(providerd.callback_base_url, "https://10.0.0.2:9443");
    // A co-located backend: both files name the same socket.
    assert.deepEqual(backend.listen, { socketPath: "/run/fred/docker-backend.sock" });
    assert.equal(providerd.backends[0].url, "unix:/run/fred/docker-backend.sock");
    assert.match(
      r.stderr,
      /warning: SKU docker-medium is larger than the whole host \(1\.5 cores, 512 MB memory/,
    );

    const missing = await init("five", ...skip, "--sku", "not-there:3600upwr:1:1024", ...key());
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /has no active SKU named not-there/);
    assert.equal(existsSync(join(work, "five")), false);
  });

  it("--as-authority registers with the module authority's key (a devnet whose authority is tenant1)", async () => {
    const tenant = dn.account("tenant1").address;
    await dn.restart({ env: { POA_ADMIN_ADDRESS: tenant } });
    const r = await init(
      "six",
      "--as-authority",
      "--api-url",
      "https://authority.example.com",
      "--sku",
      "by-authority:3600upwr:0.25:256",
      "--from",
      "tenant1",
      "--home",
      dn.home,
      "--rpc",
      dn.rpc,
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.deepEqual(out.registered, { provider: true, skus: ["by-authority"] });
    const show = JSON.parse(
      (await runFred(["chain", "provider", "show", out.provider_uuid, "--rpc", dn.rpc])).stdout,
    );
    assert.equal(show.address, tenant);
    assert.equal(show.api_url, "https://authority.example.com");
  });

  it("bad input: refused with a clear message before anything is sent", async () => {
    const cases: [string[], RegExp][] = [
      [["--sku", "docker-small:360000upwr", ...key()], /wrong number of fields/],
      [["--sku", "Big:360000upwr:1:512", ...key()], /lowercase letters/],
      [["--sku", "a:1000upwr:1:512", ...key()], /divisible by 3600/],
      [["--sku", "a:3600upwr:1:512", "--skip-register", ...key()], /--skip-register needs --provider-uuid/],
      [
        ["--sku", "a:3600upwr:1:512", "--api-url", "http://x.example", ...key()],
        /--api-url must be an https/,
      ],
      [["--sku", "a:3600upwr:1:512", "--sku", "a:7200upwr:1:512", ...key()], /--sku a is given twice/],
      [
        ["--sku", "a:3600upwr:1:512", "--callback-base-url", "localhost:8080", ...key()],
        /--callback-base-url must/,
      ],
      [["--sku", "a:3600upwr:1:512", "--rpc", dn.rpc], /exactly one key/],
      [
        ["--sku", "a:3600upwr:1:512", "--backend-url", "unix:run/backend.sock", ...key()],
        /--backend-url must name an absolute socket path/,
      ],
      [
        ["--sku", "a:3600upwr:1:512", "--host-memory-mb", "0", ...key()],
        /--host-memory-mb.*whole number above 0/,
      ],
      [
        ["--sku", "a:3600upwr:1:512", "--host-cpu-cores", "lots", ...key()],
        /--host-cpu-cores.*number above 0/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await init("bad", ...args);
      assert.equal(r.code, 1, args.join(" "));
      assert.match(r.stderr, message, args.join(" "));
      assert.equal(r.stdout, "", args.join(" "));
    }
    assert.equal(existsSync(join(work, "bad")), false);
  });
});
