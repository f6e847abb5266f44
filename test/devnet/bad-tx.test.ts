/**
 * Bad transactions are refused at broadcast with the SDK's code, codespace and wording, and
 * change nothing: balances, sequences and the height stay where they were.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { buildSignedTx } from "../../src/devnet/tx/build.ts";
import { type Devnet, devnet } from "../support/index.ts";
import { rpc } from "./helpers.ts";

describe("bad transactions", () => {
  let dn: Devnet;
  let from: { address: string; key: Buffer };
  let to: string;
  let accountNumber: bigint;

  const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");

  const send = (
    over: Partial<{
      chainId: string;
      accountNumber: bigint;
      sequence: bigint;
      fee: string;
      typeUrl: string;
      memo: string;
    }> = {},
  ) =>
    buildSignedTx({
      chainId: over.chainId ?? "fred-devnet-1",
      messages: [
        {
          typeUrl: over.typeUrl ?? "/cosmos.bank.v1beta1.MsgSend",
          value: MsgSend.encode({
            fromAddress: from.address,
            toAddress: to,
            amount: [{ denom: "umfx", amount: "10" }],
          }).finish(),
        },
      ],
      signers: [
        {
          privateKey: from.key,
          accountNumber: over.accountNumber ?? accountNumber,
          sequence: over.sequence ?? 0n,
        },
      ],
      fee: { amount: [{ denom: "umfx", amount: over.fee ?? "5000" }], gasLimit: 200_000n },
      memo: over.memo,
    });

  async function snapshot() {
    const status = await rpc(dn.rpc, "status");
    const balance = async (a: string) => {
      const { QueryBalanceRequest } = await import("cosmjs-types/cosmos/bank/v1beta1/query");
      const data = Buffer.from(QueryBalanceRequest.encode({ address: a, denom: "umfx" }).finish()).toString(
        "hex",
      );
      const r = await rpc(dn.rpc, "abci_query", { path: "/cosmos.bank.v1beta1.Query/Balance", data });
      return r.result.response.value as string;
    };
    return {
      height: status.result.sync_info.latest_block_height,
      from: await balance(from.address),
      to: await balance(to),
      mempool: (await rpc(dn.rpc, "num_unconfirmed_txs")).result.total,
    };
  }

  async function expectRefused(tx: Uint8Array, code: number, log: string | RegExp) {
    const before = await snapshot();
    const r = await rpc(dn.rpc, "broadcast_tx_sync", { tx: b64(tx) });
    assert.equal(r.error, undefined);
    assert.equal(r.result.code, code, r.result.log);
    assert.equal(r.result.codespace, "sdk");
    if (typeof log === "string") assert.equal(r.result.log, log);
    else assert.match(r.result.log, log);
    assert.match(r.result.hash, /^[0-9A-F]{64}$/);
    assert.deepEqual(await snapshot(), before, "nothing changed");
  }

  before(async () => {
    dn = await devnet();
    const t1 = dn.account("tenant1");
    from = { address: t1.address, key: Buffer.from(t1.private_key_hex, "hex") };
    to = dn.account("tenant2").address;
    const { QueryAccountRequest, QueryAccountResponse } = await import(
      "cosmjs-types/cosmos/auth/v1beta1/query"
    );
    const { BaseAccount } = await import("cosmjs-types/cosmos/auth/v1beta1/auth");
    const data = Buffer.from(QueryAccountRequest.encode({ address: from.address }).finish()).toString("hex");
    const r = await rpc(dn.rpc, "abci_query", { path: "/cosmos.auth.v1beta1.Query/Account", data });
    const any = QueryAccountResponse.decode(Buffer.from(r.result.response.value, "base64")).account;
    accountNumber = BaseAccount.decode(any?.value ?? new Uint8Array()).accountNumber;
  });

  after(async () => {
    await dn?.stop();
  });

  const sigFailure = (n: bigint | string) =>
    `signature verification failed; please verify account number (${n}) and chain-id (fred-devnet-1): (unable to verify single signer signature): unauthorized`;

  it("wrong signature → code 4", async () => {
    const tx = send();
    tx[tx.length - 5] = (tx[tx.length - 5] as number) ^ 0x01;
    await expectRefused(tx, 4, sigFailure(accountNumber));
  });

  it("wrong chain id → code 4", async () => {
    await expectRefused(send({ chainId: "other-chain-1" }), 4, sigFailure(accountNumber));
  });

  it("wrong account number → code 4", async () => {
    await expectRefused(send({ accountNumber: accountNumber + 7n }), 4, sigFailure(accountNumber));
  });

  it("wrong sequence → code 32 with the expected sequence", async () => {
    await expectRefused(
      send({ sequence: 5n }),
      32,
      "account sequence mismatch, expected 0, got 5: incorrect account sequence",
    );
  });

  it("fee below the minimum gas price → code 13", async () => {
    await expectRefused(
      send({ fee: "1" }),
      13,
      "insufficient fees; got: 1umfx required: 5umfx: insufficient fee",
    );
  });

  it("unknown message type → code 2", async () => {
    await expectRefused(
      send({ typeUrl: "/example.v1.MsgNothing" }),
      2,
      "unable to resolve type URL /example.v1.MsgNothing: tx parse error",
    );
  });

  it("malformed protobuf → code 2", async () => {
    await expectRefused(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]), 2, /tx parse error$/);
  });

  it("memo over 256 characters → code 12", async () => {
    await expectRefused(
      send({ memo: "x".repeat(257) }),
      12,
      /maximum number of characters is 256 but received 257 characters: memo too large$/,
    );
  });

  it("Simulate wraps a failure as code 6 with the SDK's rpc error text", async () => {
    const { SimulateRequest } = await import("cosmjs-types/cosmos/tx/v1beta1/service");
    const data = Buffer.from(SimulateRequest.encode({ txBytes: send({ sequence: 9n }) }).finish()).toString(
      "hex",
    );
    const r = await rpc(dn.rpc, "abci_query", { path: "/cosmos.tx.v1beta1.Service/Simulate", data });
    assert.equal(r.result.response.code, 6);
    assert.equal(r.result.response.codespace, "sdk");
    assert.match(
      r.result.response.log,
      /^rpc error: code = Unknown desc = account sequence mismatch, expected 0, got 9: incorrect account sequence With gas wanted: '200000' and gas used: '\d+' : unknown request$/,
    );
  });

  it("oversized tx → JSON-RPC error, nothing stored", async () => {
    const before = await snapshot();
    const r = await rpc(dn.rpc, "broadcast_tx_sync", { tx: b64(Buffer.alloc(1_100_000, 1)) });
    assert.deepEqual(r.error, {
      code: -32603,
      message: "Internal error",
      data: "Tx too large. Max size is 1048576, but got 1100000",
    });
    assert.deepEqual(await snapshot(), before);
  });

  it("a valid tx still goes through afterwards, and its duplicate is refused from the cache", async () => {
    const tx = send();
    const r = await rpc(dn.rpc, "broadcast_tx_commit", { tx: b64(tx) });
    assert.equal(r.result.check_tx.code, 0);
    assert.equal(r.result.tx_result.code, 0);
    assert.match(r.result.height, /^[1-9][0-9]*$/);
    const again = await rpc(dn.rpc, "broadcast_tx_sync", { tx: b64(tx) });
    assert.deepEqual(again.error, {
      code: -32603,
      message: "Internal error",
      data: "tx already exists in cache",
    });
  });
});
