/**
 * GET /fred/devnet on a real devnet: an HTML page with the chain, the dev accounts and their
 * balances, and the latest blocks (one of them holding a tx sent with cosmjs); no mnemonic or
 * private key on it, scripts and framing forbidden by its headers.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DirectSecp256k1HdWallet } from "@cosmjs/proto-signing";
import { assertIsDeliverTxSuccess, GasPrice, SigningStargateClient } from "@cosmjs/stargate";
import { type Devnet, devnet } from "../support/index.ts";
import { stopCosmjsReconnectsAfterDisconnect } from "./helpers.ts";

stopCosmjsReconnectsAfterDisconnect();

describe("GET /fred/devnet", () => {
  let dn: Devnet;
  let signer: SigningStargateClient;

  before(async () => {
    dn = await devnet();
    const wallet = await DirectSecp256k1HdWallet.fromMnemonic(dn.account("tenant1").mnemonic, {
      prefix: "manifest",
    });
    signer = await SigningStargateClient.connectWithSigner(dn.rpc, wallet, {
      gasPrice: GasPrice.fromString("0.025umfx"),
      broadcastPollIntervalMs: 100,
    });
  });
  after(async () => {
    signer?.disconnect();
    await dn?.stop();
  });

  it("lists the dev accounts with balances and the latest blocks, and no secrets", async () => {
    const sent = await signer.sendTokens(
      dn.account("tenant1").address,
      dn.account("tenant2").address,
      [{ denom: "umfx", amount: "1" }],
      "auto",
    );
    assertIsDeliverTxSuccess(sent);
    const res = await fetch(`${dn.rpc}/fred/devnet`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    assert.match(res.headers.get("content-security-policy") ?? "", /default-src 'none'/);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    const html = await res.text();
    assert.match(html, /Chain <b>fred-devnet-1<\/b>/);
    for (const a of dn.keys.accounts) {
      assert.ok(html.includes(`<td>${a.name}</td><td>${a.address}</td>`), a.name);
      assert.ok(!html.includes(a.private_key_hex), `${a.name}: no private key`);
      assert.ok(!html.includes(a.mnemonic), `${a.name}: no mnemonic`);
    }
    assert.match(html, /<td>\d+umfx/, "balances are shown");
    const block = await signer.getBlock(sent.height);
    assert.ok(html.includes(`<td>${sent.height}</td>`), "the tx's block is listed");
    assert.ok(html.includes(`<td>1</td><td>${block.id}</td>`), "with its tx count and hash");
  });
});
