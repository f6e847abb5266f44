import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { Agent, fetch } from "undici";
import { TenantKey } from "../provider/api/tenant-client.ts";
import { launchFred, runFred, until } from "../support/index.ts";

describe("fred up (npm start)", () => {
  const home = mkdtempSync(join(tmpdir(), "fred-up-"));
  after(() => rmSync(home, { recursive: true, force: true }));

  it("starts devnet, mock backend and providerd; a lease becomes ACTIVE; Ctrl-C stops all", async () => {
    await using up = await launchFred(["up", "--home", home], {
      env: { FRED_LOG_LEVEL: process.env.FRED_LOG_LEVEL },
      ready: (line, stream) =>
        stream === "stderr" && line.includes("Press Ctrl-C to stop.") ? true : undefined,
      readyTimeoutMs: 120_000,
    });
    const stderr = up.stderr();
    try {
      const rpc = /devnet\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
      const api = /providerd\s+(https:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
      assert.ok(rpc, "the devnet RPC URL is printed");
      // The devnet's REST (LCD) endpoint: 1317 when free, printed under the devnet line.
      const rest = /REST\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
      assert.ok(rest, "the devnet REST URL is printed");
      const syncing = await fetch(`${rest}/cosmos/base/tendermint/v1beta1/syncing`);
      assert.deepEqual(await syncing.json(), { syncing: false });
      assert.ok(api, "the providerd URL is printed (https, with fred up's local CA)");
      assert.match(stderr, new RegExp(`provider record on chain: api_url ${api}`));
      assert.match(stderr, /mock backend\s+http:\/\/127\.0\.0\.1:\d+/);
      const faucet = /faucet\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
      assert.ok(faucet, "the faucet URL is printed");
      assert.equal(((await (await fetch(`${faucet}/status`)).json()) as { status: string }).status, "ok");
      assert.equal(up.stdout(), "", "fred up keeps stdout free of logs");
      // The dashboard's link: the operator listener, its token in the fragment (never sent).
      const dashboard = /dashboard\s+(http:\/\/127\.0\.0\.1:\d+)\/#token=([0-9a-f]{64})/.exec(stderr);
      assert.ok(dashboard, "the dashboard URL is printed with its token");
      const [, operator, token] = dashboard;
      assert.equal(readFileSync(join(home, "providerd", "operator-token"), "utf8").trim(), token);
      const overview = await fetch(`${operator}/api/overview`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(overview.status, 200);
      assert.equal((await fetch(`${operator}/api/overview`)).status, 401);

      const created = await runFred([
        "chain",
        "lease",
        "create",
        "--sku",
        "docker-small",
        "--from",
        "tenant1",
        "--home",
        join(home, "devnet"),
        "--rpc",
        rpc,
      ]);
      assert.equal(created.code, 0, created.stderr);
      const lease = JSON.parse(created.stdout).lease_uuid as string;
      await until(
        async () => {
          const shown = await runFred(["chain", "lease", "show", lease, "--rpc", rpc]);
          return shown.code === 0 && JSON.parse(shown.stdout).state === "LEASE_STATE_ACTIVE";
        },
        "the lease to become ACTIVE",
        { timeoutMs: 90_000, intervalMs: 250 },
      );
      const caFile = join(home, "tls", "ca.pem");
      const dispatcher = new Agent({ connect: { ca: readFileSync(caFile, "utf8") } });
      const workloads = await fetch(`${api}/workloads?lease_uuid=${lease}`, { dispatcher });
      assert.equal(workloads.status, 200);
      assert.match(await workloads.text(), new RegExp(lease));

      // Without --provider-url, fred lease finds providerd through the provider record on
      // chain and trusts the local CA because --home is this fred up's devnet.
      const key = ["--rpc", rpc, "--from", "tenant1", "--home", join(home, "devnet")];
      const found = await runFred(["lease", "status", lease, ...key]);
      assert.equal(found.code, 0, found.stderr);
      assert.equal(JSON.parse(found.stdout).state, "LEASE_STATE_ACTIVE");
      // The same key by hex from elsewhere: the CA is not trusted unless named.
      const devnet = JSON.parse(
        (await runFred(["devnet", "keys", "--home", join(home, "devnet")])).stdout,
      ) as {
        accounts: { name: string; private_key_hex: string }[];
      };
      const hex = devnet.accounts.find((a) => a.name === "tenant1")?.private_key_hex as string;
      // fred up admits every tenant on the legacy terms (["*"]): a v0.13 tenant tool's
      // restart, with no Idempotency-Key, is accepted.
      const restart = await fetch(`${api}/v1/leases/${lease}/restart`, {
        method: "POST",
        headers: { authorization: `Bearer ${new TenantKey(hex).fresh(lease)}` },
        dispatcher,
      });
      assert.equal(restart.status, 202, await restart.text());
      const untrusted = await runFred(["lease", "status", lease, "--rpc", rpc, "--key-hex", hex], {
        env: { NODE_EXTRA_CA_CERTS: "" },
      });
      assert.equal(untrusted.code, 1, "verification is never turned off");
      assert.match(
        untrusted.stderr,
        /cannot reach the provider at https:\/\/127\.0\.0\.1:\d+\/: .*certificate is not trusted/,
      );
      for (const trust of [{ args: ["--ca-file", caFile] }, { env: { NODE_EXTRA_CA_CERTS: caFile } }]) {
        const r = await runFred(
          ["lease", "status", lease, "--rpc", rpc, "--key-hex", hex, ...(trust.args ?? [])],
          {
            env: trust.env ?? {},
          },
        );
        assert.equal(r.code, 0, r.stderr);
      }
    } finally {
      up.signal("SIGINT");
    }
    assert.equal((await up.exited).code, 0, up.stderr().slice(-2000));
  });

  it("--docker uses DOCKER_HOST, and names it when no engine answers there", async () => {
    const other = mkdtempSync(join(tmpdir(), "fred-up-dockerhost-"));
    try {
      const r = await runFred(["up", "--home", other, "--docker"], {
        env: { DOCKER_HOST: "unix:///nonexistent/fred-test/docker.sock" },
      });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /no Docker engine answers at unix:\/\/\/nonexistent\/fred-test\/docker\.sock/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
