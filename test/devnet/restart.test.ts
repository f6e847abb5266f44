/**
 * Crash safety: kill -9 while blocks full of txs are being produced, restart on the same
 * home, and the chain resumes at a consistent height and state (every committed block
 * present and linked, balances and sequences matching exactly the committed txs).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { QueryBalanceRequest, QueryBalanceResponse } from "cosmjs-types/cosmos/bank/v1beta1/query";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { privateKeyFromMnemonic } from "../../src/auth/keys.ts";
import { buildSignedTx } from "../../src/devnet/tx/build.ts";
import { devnet, runFred } from "../support/index.ts";
import { rpc } from "./helpers.ts";

const AMOUNT = 3n;
const FEE = 5000n;

describe("restart after kill -9", () => {
  it("resumes at the committed height with state matching the committed txs", async () => {
    await using dn = await devnet({ blockTime: "100ms" });
    const url = dn.rpc;
    const t1 = dn.account("tenant1");
    const to = dn.account("tenant2").address;
    const key = Buffer.from(t1.private_key_hex, "hex");
    const balance = async (u: string, address: string) => {
      const data = Buffer.from(QueryBalanceRequest.encode({ address, denom: "umfx" }).finish()).toString(
        "hex",
      );
      const r = await rpc(u, "abci_query", { path: "/cosmos.bank.v1beta1.Query/Balance", data });
      return BigInt(
        QueryBalanceResponse.decode(Buffer.from(r.result.response.value, "base64")).balance?.amount ?? "-1",
      );
    };
    const tx = (sequence: bigint) =>
      Buffer.from(
        buildSignedTx({
          chainId: "fred-devnet-1",
          messages: [
            {
              typeUrl: "/cosmos.bank.v1beta1.MsgSend",
              value: MsgSend.encode({
                fromAddress: t1.address,
                toAddress: to,
                amount: [{ denom: "umfx", amount: String(AMOUNT) }],
              }).finish(),
            },
          ],
          signers: [{ privateKey: key, accountNumber: 1n, sequence }],
          fee: { amount: [{ denom: "umfx", amount: String(FEE) }], gasLimit: 200_000n },
        }),
      ).toString("base64");
    const start1 = await balance(url, t1.address);
    const start2 = await balance(url, to);

    // Keep the node busy: a stream of txs while blocks commit every 100 ms; kill it mid-stream.
    let seq = 0n;
    let observedHeight = 0;
    for (;;) {
      const r = await rpc(url, "broadcast_tx_sync", { tx: tx(seq) });
      assert.equal(r.result.code, 0, r.result.log);
      seq++;
      if (seq % 10n === 0n) {
        observedHeight = Number((await rpc(url, "status")).result.sync_info.latest_block_height);
        if (observedHeight >= 6 && seq >= 60n) break;
      }
    }
    await dn.kill();

    await dn.restart();
    const u = dn.rpc;
    const height = Number((await rpc(u, "status")).result.sync_info.latest_block_height);
    assert.ok(height >= observedHeight, `restart height ${height} >= last observed ${observedHeight}`);

    // Every block is there and linked to its parent.
    let prevHash = "";
    for (let h = 1; h <= height; h++) {
      const b = (await rpc(u, "block", { height: String(h) })).result;
      assert.equal(b.block.header.last_block_id.hash, prevHash, `block ${h} links to ${h - 1}`);
      prevHash = b.block_id.hash;
    }

    // State equals exactly the committed txs.
    const committed = BigInt(
      (await rpc(u, "tx_search", { query: `message.sender='${t1.address}' AND tx.height<=${height}` })).result
        .total_count,
    );
    assert.ok(committed > 0n && committed <= seq);
    const { QueryAccountRequest, QueryAccountResponse } = await import(
      "cosmjs-types/cosmos/auth/v1beta1/query"
    );
    const { BaseAccount } = await import("cosmjs-types/cosmos/auth/v1beta1/auth");
    const data = Buffer.from(QueryAccountRequest.encode({ address: t1.address }).finish()).toString("hex");
    const acct = (await rpc(u, "abci_query", { path: "/cosmos.auth.v1beta1.Query/Account", data })).result
      .response;
    const sequence = BaseAccount.decode(
      QueryAccountResponse.decode(Buffer.from(acct.value, "base64")).account?.value ?? new Uint8Array(),
    ).sequence;
    assert.equal(sequence, committed, "sequence = committed txs");
    assert.equal(start1 - (await balance(u, t1.address)), committed * (AMOUNT + FEE));
    assert.equal((await balance(u, to)) - start2, committed * AMOUNT);

    // And the chain goes on from there with the next sequence.
    const next = await rpc(u, "broadcast_tx_commit", { tx: tx(sequence) });
    assert.equal(next.result.tx_result.code, 0);
    assert.ok(Number(next.result.height) > height);

    // `fred devnet keys` reads plain files, so it works while the node runs.
    const keys = await runFred(["devnet", "keys", "--home", dn.home]);
    assert.equal(keys.code, 0, keys.stderr);
    const parsed = JSON.parse(keys.stdout);
    assert.deepEqual(Object.keys(parsed), ["chain_id", "pwr_denom", "provider_uuid", "accounts", "skus"]);
    assert.equal(parsed.pwr_denom, "upwr");
    assert.deepEqual(
      parsed.accounts.map((a: { name: string }) => a.name),
      ["provider", "tenant1", "tenant2", "faucet"],
    );
    const t1k = parsed.accounts[1];
    assert.equal(Buffer.from(privateKeyFromMnemonic(t1k.mnemonic)).toString("hex"), t1k.private_key_hex);
  });
});
