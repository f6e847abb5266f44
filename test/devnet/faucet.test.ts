/**
 * The devnet faucet over real HTTP against a real `fred devnet start --faucet-port 0`: a
 * credit moves exactly the configured amount (seen through the RPC's bank queries), the
 * cooldown and bad input refuse with the CosmJS faucet's statuses and move nothing, and 100
 * concurrent credits to 100 new addresses each land once, in successful txs, with the faucet
 * account paying exactly 100 × (amount + fee); concurrent requests for one address get one
 * credit; the settings flags, 1-second blocks and a faucet key used by another client too.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { DirectSecp256k1HdWallet } from "@cosmjs/proto-signing";
import { assertIsDeliverTxSuccess, GasPrice, SigningStargateClient, StargateClient } from "@cosmjs/stargate";
import { encodeAddress } from "../../src/devnet/address.ts";
import { type Devnet, devnet, listenLoopback, runFred } from "../support/index.ts";
import { rpc, stopCosmjsReconnectsAfterDisconnect } from "./helpers.ts";

stopCosmjsReconnectsAfterDisconnect();

const UMFX = 10_000_000n;
const UPWR = 10_000_000n;
/** Each credit tx declares gas 200000 at the default minimum price 0.000025umfx: ceil(5) umfx. */
const FEE = 5n;

/** A fresh, never-used address, the same on every run. */
const newAddress = (label: string, prefix = "manifest") =>
  encodeAddress(createHash("sha256").update(`faucet-test/${label}`).digest().subarray(0, 20), prefix);

const faucetUrlOf = (dn: Devnet) => {
  const url = (dn.proc.ready as { faucet?: string }).faucet;
  assert.ok(url, "the ready line names the faucet");
  return url;
};

const credit = (faucet: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${faucet}/credit`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

describe("devnet faucet", () => {
  let dn: Devnet;
  let faucet: string;
  let chain: StargateClient;
  let holder: string;
  const balance = async (address: string, denom: string) =>
    BigInt((await chain.getBalance(address, denom)).amount);

  before(async () => {
    dn = await devnet({ args: ["--faucet-port", "0"] });
    faucet = faucetUrlOf(dn);
    holder = dn.account("faucet").address;
    chain = await StargateClient.connect(dn.rpc);
  });
  after(async () => {
    chain?.disconnect();
    await dn?.stop();
  });

  it("GET /status: the CosmJS faucet's shape, with the faucet account as holder and sender", async () => {
    const res = await fetch(`${faucet}/status`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    const status = await res.json();
    const account = {
      address: holder,
      balance: [
        { denom: "umfx", amount: String(await balance(holder, "umfx")) },
        { denom: "upwr", amount: String(await balance(holder, "upwr")) },
      ],
    };
    assert.deepEqual(status, {
      status: "ok",
      nodeUrl: dn.rpc,
      chainId: "fred-devnet-1",
      chainTokens: ["umfx", "upwr"],
      availableTokens: ["umfx", "upwr"],
      holder: account,
      distributors: [account],
    });
    assert.equal(res.headers.get("access-control-allow-origin"), "*");
    // A browser wallet's preflight before its JSON POST.
    const preflight = await fetch(`${faucet}/credit`, {
      method: "OPTIONS",
      headers: { origin: "http://wallet.localhost", "access-control-request-method": "POST" },
    });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get("access-control-allow-methods") ?? "", /POST/);
    assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /content-type/);
  });

  it("credits an address once with exactly the amount, then refuses it within the cooldown", async () => {
    const to = newAddress("once");
    const holderBefore = await balance(holder, "umfx");
    const res = await credit(faucet, { address: to, denom: "umfx" });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "ok");
    const hash = res.headers.get("x-faucet-tx-hash") ?? "";
    assert.match(hash, /^[0-9A-F]{64}$/);
    assert.equal(await balance(to, "umfx"), UMFX);
    assert.equal(await balance(holder, "umfx"), holderBefore - UMFX - FEE);
    const tx = (await rpc(dn.rpc, "tx", { hash: Buffer.from(hash, "hex").toString("base64") })).result;
    assert.equal(tx.tx_result.code, 0);

    const height = (await chain.getHeight()) as number;
    const again = await credit(faucet, { address: to, denom: "umfx" });
    assert.equal(again.status, 405);
    assert.match(await again.text(), /already received umfx; one credit per address and denom every 24h0m0s/);
    assert.ok(Number(again.headers.get("retry-after")) > 86_000, "retry-after close to a day");
    assert.equal(await balance(to, "umfx"), UMFX, "nothing more arrived");
    assert.equal(await balance(holder, "umfx"), holderBefore - UMFX - FEE, "nothing more left");
    assert.equal(await chain.getHeight(), height, "no tx, so no block (block time 0s)");

    // The cooldown is per denom: the same address still gets PWR once.
    const pwr = await credit(faucet, { address: to, denom: "upwr" });
    assert.equal(pwr.status, 200);
    assert.equal(await balance(to, "upwr"), UPWR);
    assert.equal((await credit(faucet, { address: to, denom: "upwr" })).status, 405);
  });

  it("refuses bad input with the CosmJS faucet's statuses and moves nothing", async () => {
    const to = newAddress("bad-input");
    const holderUmfx = await balance(holder, "umfx");
    const holderUpwr = await balance(holder, "upwr");
    const height = await chain.getHeight();
    const cases: [string, () => Promise<Response>, number, RegExp][] = [
      ["GET", () => fetch(`${faucet}/credit`), 405, /takes a POST request/],
      ["text body", () => credit(faucet, "x", { "content-type": "text/plain" }), 415, /application\/json/],
      ["bad JSON", () => credit(faucet, "{address:"), 400, /not valid JSON/],
      ["array", () => credit(faucet, [to, "umfx"]), 400, /must be a JSON object/],
      ["no address", () => credit(faucet, { denom: "umfx" }), 400, /'address' must be a string/],
      ["empty denom", () => credit(faucet, { address: to, denom: "" }), 400, /'denom' must not be empty/],
      ["ticker", () => credit(faucet, { address: to, ticker: "MFX" }), 400, /'denom'/],
      [
        "wrong prefix",
        () => credit(faucet, { address: newAddress("bad-input", "cosmos"), denom: "umfx" }),
        400,
        /invalid Bech32 prefix; expected manifest, got cosmos/,
      ],
      [
        "malformed",
        () => credit(faucet, { address: "manifest1nope", denom: "umfx" }),
        400,
        /not a manifest1/,
      ],
      ["unknown denom", () => credit(faucet, { address: to, denom: "uatom" }), 422, /offers: umfx, upwr/],
      [
        "oversized",
        () => credit(faucet, { address: to, denom: "umfx", pad: "x".repeat(20_000) }),
        413,
        /exceeds 16384 bytes/,
      ],
      [
        "duplicate key",
        () => credit(faucet, `{"address":"${to}","denom":"umfx","denom":"upwr"}`),
        400,
        /duplicate key/,
      ],
    ];
    for (const [name, send, status, text] of cases) {
      const res = await send();
      assert.equal(res.status, status, name);
      assert.match(res.headers.get("content-type") ?? "", /^text\/plain/, name);
      assert.match(await res.text(), text, name);
    }
    assert.equal(await balance(to, "umfx"), 0n);
    assert.equal(await balance(holder, "umfx"), holderUmfx);
    assert.equal(await balance(holder, "upwr"), holderUpwr);
    assert.equal(await chain.getHeight(), height, "no tx reached the chain");
    // A refused request did not start the cooldown: the address can still be credited.
    assert.equal((await credit(faucet, { address: to, denom: "umfx" })).status, 200);
  });

  it("100 concurrent credits to 100 new addresses: each credited once, no sequence reused", async () => {
    const addresses = Array.from({ length: 100 }, (_, i) => newAddress(`concurrent/${i}`));
    const holderBefore = await balance(holder, "umfx");
    const answers = await Promise.all(addresses.map((address) => credit(faucet, { address, denom: "umfx" })));
    const hashes = await Promise.all(
      answers.map(async (res, i) => {
        assert.equal(res.status, 200, `${addresses[i]}: ${await res.clone().text()}`);
        assert.equal(await res.text(), "ok");
        return res.headers.get("x-faucet-tx-hash") ?? "";
      }),
    );
    assert.equal(new Set(hashes).size, 100, "one distinct tx per credit");
    for (const address of addresses) assert.equal(await balance(address, "umfx"), UMFX, address);
    assert.equal(await balance(holder, "umfx"), holderBefore - 100n * (UMFX + FEE));
    const sequences = new Set<string>();
    for (const hash of hashes) {
      const tx = (await rpc(dn.rpc, "tx", { hash: Buffer.from(hash, "hex").toString("base64") })).result;
      assert.equal(tx.tx_result.code, 0, hash);
      const attrs = tx.tx_result.events.flatMap(
        (e: { attributes: { key: string; value: string }[] }) => e.attributes,
      );
      const accSeq = attrs.find((a: { key: string }) => a.key === "acc_seq")?.value as string;
      assert.ok(accSeq?.startsWith(`${holder}/`), `acc_seq event in ${hash}`);
      sequences.add(accSeq);
    }
    assert.equal(sequences.size, 100, "every tx used its own sequence");
  });

  it("10 concurrent requests for one address: one credit, nine cooldown refusals", async () => {
    const to = newAddress("same-address");
    const holderBefore = await balance(holder, "umfx");
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => credit(faucet, { address: to, denom: "umfx" })),
    );
    const statuses = answers.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 405, 405, 405, 405, 405, 405, 405, 405, 405]);
    assert.equal(await balance(to, "umfx"), UMFX);
    assert.equal(await balance(holder, "umfx"), holderBefore - UMFX - FEE);
  });

  it("another client spending from the faucet key meanwhile does not break the next credit", async () => {
    const wallet = await DirectSecp256k1HdWallet.fromMnemonic(dn.account("faucet").mnemonic, {
      prefix: "manifest",
    });
    const other = await SigningStargateClient.connectWithSigner(dn.rpc, wallet, {
      gasPrice: GasPrice.fromString("0.025umfx"),
      broadcastPollIntervalMs: 100,
    });
    try {
      // The faucet already signed above, so it holds a sequence this tx now takes.
      assertIsDeliverTxSuccess(
        await other.sendTokens(holder, newAddress("other"), [{ denom: "umfx", amount: "1" }], "auto"),
      );
    } finally {
      other.disconnect();
    }
    const to = newAddress("after-other");
    const res = await credit(faucet, { address: to, denom: "umfx" });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(await balance(to, "umfx"), UMFX);
  });
});

describe("devnet faucet settings", () => {
  it("with 1-second blocks, concurrent credits share blocks and each lands once", async () => {
    await using dn = await devnet({ blockTime: "1s", args: ["--faucet-port", "0"] });
    const faucet = faucetUrlOf(dn);
    const addresses = Array.from({ length: 20 }, (_, i) => newAddress(`one-second/${i}`));
    const answers = await Promise.all(addresses.map((address) => credit(faucet, { address, denom: "upwr" })));
    const heights = new Set<string>();
    for (const res of answers) {
      assert.equal(res.status, 200, await res.clone().text());
      const hash = res.headers.get("x-faucet-tx-hash") ?? "";
      const tx = (await rpc(dn.rpc, "tx", { hash: Buffer.from(hash, "hex").toString("base64") })).result;
      assert.equal(tx.tx_result.code, 0);
      heights.add(tx.height);
    }
    assert.ok(heights.size < addresses.length, `20 credits in ${heights.size} blocks`);
    const chain = await StargateClient.connect(dn.rpc);
    try {
      for (const address of addresses)
        assert.equal((await chain.getBalance(address, "upwr")).amount, String(UPWR));
    } finally {
      chain.disconnect();
    }
  });

  it("--faucet-amount, --faucet-cooldown 0s and --faucet-rate bound what is sent", async () => {
    await using dn = await devnet({
      args: [
        "--faucet-port",
        "0",
        "--faucet-amount",
        "7umfx",
        "--faucet-cooldown",
        "0s",
        "--faucet-rate",
        "2",
      ],
    });
    const faucet = faucetUrlOf(dn);
    const to = newAddress("settings");
    const chain = await StargateClient.connect(dn.rpc);
    try {
      assert.equal((await credit(faucet, { address: to, denom: "umfx" })).status, 200);
      // No cooldown: the same address again.
      assert.equal((await credit(faucet, { address: to, denom: "umfx" })).status, 200);
      const third = await credit(faucet, { address: to, denom: "umfx" });
      assert.equal(third.status, 429);
      assert.match(await third.text(), /at most 2 credits a minute/);
      assert.ok(Number(third.headers.get("retry-after")) >= 1);
      // upwr is held by the faucet account but not configured.
      const pwr = await credit(faucet, { address: to, denom: "upwr" });
      assert.equal(pwr.status, 422);
      assert.match(await pwr.text(), /offers: umfx$/m);
      assert.equal((await chain.getBalance(to, "umfx")).amount, "14");
    } finally {
      chain.disconnect();
    }
  });

  it("faucet settings without --faucet-port are refused", async () => {
    const r = await runFred(["devnet", "start", "--home", "/nonexistent/never-made", "--faucet-rate", "5"]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--faucet-rate needs --faucet-port/);
    const bad = await runFred([
      "devnet",
      "start",
      "--home",
      "/nonexistent/never-made",
      "--faucet-amount",
      "0umfx",
    ]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /not a coin above zero/);
  });

  it("a busy --faucet-port fails the start with no ready line", async () => {
    const held = createServer();
    const { port } = await listenLoopback(held);
    const home = await mkdtemp(join(tmpdir(), "fred-faucet-busy-"));
    try {
      const r = await runFred(
        ["devnet", "start", "--home", home, "--rpc-port", "0", "--faucet-port", String(port)],
        { env: { FRED_LOG_LEVEL: "warn" } },
      );
      assert.notEqual(r.code, 0);
      assert.equal(r.stdout, "", "no ready line");
      assert.match(r.stderr, /EADDRINUSE|address already in use/);
    } finally {
      held.close();
      await rm(home, { recursive: true, force: true });
    }
  });
});
