/**
 * The conformance checklist of cometbft-rpc.md §6 "End-to-end with cosmjs 0.39", run with
 * unmodified cosmjs clients against a real `fred devnet start` process.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DirectSecp256k1HdWallet } from "@cosmjs/proto-signing";
import {
  assertIsDeliverTxSuccess,
  BroadcastTxError,
  GasPrice,
  SigningStargateClient,
  StargateClient,
} from "@cosmjs/stargate";
import { Comet38Client, connectComet, isComet38Client } from "@cosmjs/tendermint-rpc";
import { encodeAddress } from "../../src/devnet/address.ts";
import { type Devnet, devnet, until } from "../support/index.ts";
import { stopCosmjsReconnectsAfterDisconnect } from "./helpers.ts";

stopCosmjsReconnectsAfterDisconnect();

const FAST = { broadcastPollIntervalMs: 100, broadcastTimeoutMs: 20_000 };

function firstOf<T>(
  stream: { subscribe(l: { next(v: T): void; error(e: unknown): void }): { unsubscribe(): void } },
  n: number,
) {
  return new Promise<T[]>((resolve, reject) => {
    const got: T[] = [];
    const sub = stream.subscribe({
      next(v) {
        got.push(v);
        if (got.length === n) {
          sub.unsubscribe();
          resolve(got);
        }
      },
      error: reject,
    });
  });
}

describe("cosmjs 0.39 against fred devnet", () => {
  let dn: Devnet;
  let client: StargateClient;
  let signer: SigningStargateClient;
  let tenant1: string;
  let tenant2: string;

  before(async () => {
    dn = await devnet();
    client = await StargateClient.connect(dn.rpc);
    tenant1 = dn.account("tenant1").address;
    tenant2 = dn.account("tenant2").address;
    const wallet = await DirectSecp256k1HdWallet.fromMnemonic(dn.account("tenant1").mnemonic, {
      prefix: "manifest",
    });
    signer = await SigningStargateClient.connectWithSigner(dn.rpc, wallet, {
      gasPrice: GasPrice.fromString("0.025umfx"),
      ...FAST,
    });
  });

  after(async () => {
    client?.disconnect();
    signer?.disconnect();
    await dn?.stop();
  });

  it("is detected as a CometBFT 0.38 node with the devnet chain id", async () => {
    const comet = await connectComet(dn.rpc);
    assert.ok(isComet38Client(comet));
    comet.disconnect();
    assert.equal(await client.getChainId(), "fred-devnet-1");
    // Over a websocket cosmjs probes on one socket, closes it and opens a second one.
    const overWs = await StargateClient.connect(dn.wsUrl);
    assert.equal(await overWs.getChainId(), "fred-devnet-1");
    assert.ok((await overWs.getHeight()) >= 1);
    overWs.disconnect();
    assert.ok((await client.getHeight()) >= 1);
  });

  it("reads known and unknown accounts the way cosmjs expects", async () => {
    const known = await client.getAccount(tenant2);
    assert.ok(known);
    assert.equal(known.address, tenant2);
    assert.equal(known.pubkey, null, "no pubkey before the first tx");
    const unknown = encodeAddress(new Uint8Array(20).fill(9), "manifest");
    assert.equal(await client.getAccount(unknown), null);
    await assert.rejects(client.getSequence(unknown), /does not exist on chain/);
  });

  it("answers balances, including zero for an unknown denom", async () => {
    const all = await client.getAllBalances(tenant2);
    assert.deepEqual(
      all.find((c) => c.denom === "umfx"),
      { denom: "umfx", amount: "1000000000000" },
    );
    const denoms = all.map((c) => c.denom);
    assert.deepEqual(denoms, [...denoms].sort(), "sorted by denom");
    assert.deepEqual(await client.getBalance(tenant2, "uother"), { denom: "uother", amount: "0" });
  });

  it("sends with fee auto and with an explicit fee; the sequence moves each time", async () => {
    const before1 = BigInt((await client.getBalance(tenant1, "umfx")).amount);
    const auto = await signer.sendTokens(tenant1, tenant2, [{ denom: "umfx", amount: "1000" }], "auto");
    assertIsDeliverTxSuccess(auto);
    assert.equal(typeof auto.gasUsed, "bigint");
    assert.equal(typeof auto.gasWanted, "bigint");
    assert.ok(auto.gasUsed > 0n && auto.gasUsed < 100_000n, `MsgSend gas ${auto.gasUsed}`);
    assert.ok(auto.gasUsed <= auto.gasWanted);
    assert.deepEqual(
      auto.msgResponses.map((r) => r.typeUrl),
      ["/cosmos.bank.v1beta1.MsgSendResponse"],
    );
    const explicit = await signer.sendTokens(tenant1, tenant2, [{ denom: "umfx", amount: "500" }], {
      amount: [{ denom: "umfx", amount: "5000" }],
      gas: "200000",
    });
    assertIsDeliverTxSuccess(explicit);
    assert.ok(explicit.height > auto.height);
    const acct = await client.getAccount(tenant1);
    assert.equal(acct?.sequence, 2);
    assert.equal(acct?.pubkey?.type, "tendermint/PubKeySecp256k1");
    const after1 = BigInt((await client.getBalance(tenant1, "umfx")).amount);
    const autoFee = BigInt(Math.ceil(Number(auto.gasWanted) * 0.025));
    assert.equal(before1 - after1, 1500n + autoFee + 5000n);

    const found = await client.getTx(auto.transactionHash);
    assert.equal(found?.height, auto.height);
    assert.equal(found?.code, 0);
    const byHeight = await client.searchTx([{ key: "tx.height", value: explicit.height }]);
    assert.deepEqual(
      byHeight.map((t) => t.hash),
      [explicit.transactionHash],
    );
    const bySender = await client.searchTx(`message.sender='${tenant1}'`);
    assert.deepEqual(
      bySender.map((t) => t.hash).sort(),
      [auto.transactionHash, explicit.transactionHash].sort(),
    );
    const block = await client.getBlock(explicit.height);
    assert.equal(block.header.chainId, "fred-devnet-1");
    assert.equal(block.header.height, explicit.height);
    assert.equal(block.txs.length, 1);
    assert.match(block.id, /^[0-9A-F]{64}$/);
  });

  it("reports a failing delivery as a code, not a throw, and charges only the fee", async () => {
    const before1 = BigInt((await client.getBalance(tenant1, "umfx")).amount);
    const res = await signer.sendTokens(tenant1, tenant2, [{ denom: "umfx", amount: "999999999999999" }], {
      amount: [{ denom: "umfx", amount: "5000" }],
      gas: "200000",
    });
    assert.equal(res.code, 5);
    assert.match(
      res.rawLog ?? "",
      /spendable balance \d+umfx is smaller than 999999999999999umfx: insufficient funds/,
    );
    const after1 = BigInt((await client.getBalance(tenant1, "umfx")).amount);
    assert.equal(before1 - after1, 5000n);
  });

  it("rejects a stale sequence at broadcast with BroadcastTxError code 32", async () => {
    const acct = await client.getAccount(tenant1);
    assert.ok(acct);
    const stale = await signer.sign(
      tenant1,
      [
        {
          typeUrl: "/cosmos.bank.v1beta1.MsgSend",
          value: { fromAddress: tenant1, toAddress: tenant2, amount: [{ denom: "umfx", amount: "1" }] },
        },
      ],
      { amount: [{ denom: "umfx", amount: "5000" }], gas: "200000" },
      "",
      { accountNumber: acct.accountNumber, sequence: acct.sequence - 1, chainId: "fred-devnet-1" },
    );
    const { TxRaw } = await import("cosmjs-types/cosmos/tx/v1beta1/tx");
    // A short timeout: cosmjs keeps its poll timer alive even when the broadcast is refused.
    await assert.rejects(signer.broadcastTx(TxRaw.encode(stale).finish(), 1000, 100), (err: unknown) => {
      assert.ok(err instanceof BroadcastTxError);
      assert.equal(err.code, 32);
      assert.equal(err.codespace, "sdk");
      assert.equal(
        err.log,
        `account sequence mismatch, expected ${acct.sequence}, got ${acct.sequence - 1}: incorrect account sequence`,
      );
      return true;
    });
  });

  it("streams NewBlock and Tx events over the websocket with the subscription's id", async () => {
    const comet = await Comet38Client.connect(dn.wsUrl);
    try {
      const blocks = firstOf(comet.subscribeNewBlock(), 2);
      const txs = firstOf(comet.subscribeTx(`message.sender='${tenant1}'`), 1);
      // cosmjs sends subscribe asynchronously: keep sending until the subscription delivers.
      let first: Awaited<typeof txs> | undefined;
      void txs.then((v) => {
        first = v;
      });
      const sent = new Map<number, bigint>();
      await until(
        async () => {
          if (first !== undefined) return true;
          const res = await signer.sendTokens(tenant1, tenant2, [{ denom: "umfx", amount: "7" }], "auto");
          assertIsDeliverTxSuccess(res);
          sent.set(res.height, res.gasUsed);
          return first !== undefined;
        },
        "the Tx subscription to deliver one of the sent txs",
        { timeoutMs: 20_000, intervalMs: 0 },
      );
      const [tx] = await txs;
      assert.ok(tx);
      assert.ok(sent.has(tx.height), "the pushed tx is one we sent, at its committed height");
      assert.equal(tx.result.code, 0);
      assert.equal(tx.result.gasUsed, sent.get(tx.height));
      await signer.sendTokens(tenant1, tenant2, [{ denom: "umfx", amount: "7" }], "auto");
      const got = await blocks;
      assert.ok(
        (got[1]?.header.height ?? 0) === (got[0]?.header.height ?? 0) + 1,
        "blocks arrive in height order",
      );
    } finally {
      comet.disconnect();
    }
  });
});
