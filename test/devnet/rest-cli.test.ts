/**
 * The pinned `fred devnet start --rest-port <port>` form: the ready line gains "rest" only
 * when the flag is given, the endpoint answers for the same chain, a taken REST port fails
 * the start, and bad values are refused by the argument parser.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { devnet, runFred } from "../support/index.ts";

describe("fred devnet start --rest-port", () => {
  const homes: string[] = [];
  after(() => {
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });

  it("adds the REST URL to the ready line and serves the chain there; without the flag there is none", async () => {
    await using dn = await devnet({ args: ["--rest-port", "0"] });
    const ready = dn.proc.ready as unknown as Record<string, unknown>;
    assert.deepEqual(Object.keys(ready), ["rpc", "rest", "chain_id", "height"]);
    const rest = ready.rest as string;
    assert.match(rest, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(rest, dn.rpc);
    const res = await fetch(`${rest}/cosmos/base/tendermint/v1beta1/node_info`);
    assert.equal(res.status, 200);
    const info = (await res.json()) as { default_node_info: { network: string } };
    assert.equal(info.default_node_info.network, ready.chain_id);

    // A second node on another home asking for the same REST port does not start.
    const home = mkdtempSync(join(tmpdir(), "fred-rest-cli-"));
    homes.push(home);
    const busy = await runFred([
      "devnet",
      "start",
      "--home",
      home,
      "--rpc-port",
      "0",
      "--rest-port",
      new URL(rest).port,
    ]);
    assert.notEqual(busy.code, 0);
    assert.match(busy.stderr, /EADDRINUSE|address already in use/i);
    assert.equal(busy.stdout, "", "no ready line");

    await using plain = await devnet();
    assert.deepEqual(Object.keys(plain.proc.ready), ["rpc", "chain_id", "height"]);
  });

  it("refuses a port that is not a number from 0 to 65535, and documents the flag in --help", async () => {
    for (const port of ["abc", "70000", "-1"]) {
      const r = await runFred(["devnet", "start", "--home", "/tmp/fred-rest-never", "--rest-port", port]);
      assert.notEqual(r.code, 0, port);
      assert.match(r.stderr, /--rest-port/);
    }
    const help = await runFred(["devnet", "start", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--rest-port <port>/);
    assert.match(help.stdout, /"rest":"http:\/\/127\.0\.0\.1:<port>"/);
  });
});
