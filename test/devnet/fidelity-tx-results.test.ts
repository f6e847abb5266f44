/**
 * What a cosmjs client reads back from transactions, compared with an SDK v0.50 node: the
 * log of a failed message (delivered, and from Simulate) names the message index the way
 * baseapp does, and every event of authz MsgExec's i-th inner message carries
 * `authz_msg_index=i` before baseapp's `msg_index`. A real `fred devnet start` process.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DirectSecp256k1HdWallet, type EncodeObject } from "@cosmjs/proto-signing";
import { assertIsDeliverTxSuccess, GasPrice, SigningStargateClient } from "@cosmjs/stargate";
import { GenericAuthorization } from "cosmjs-types/cosmos/authz/v1beta1/authz";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { chainRegistry } from "../../src/chain/amino-signing.ts";
import {
  MsgAcknowledgeLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgRejectLease,
} from "../../src/chain/proto/index.ts";
import { type Devnet, devnet } from "../support/index.ts";
import { stopCosmjsReconnectsAfterDisconnect } from "./helpers.ts";

stopCosmjsReconnectsAfterDisconnect();

const FEE = { amount: [{ denom: "umfx", amount: "10000" }], gas: "400000" };
const HUGE = "999999999999999999";
const registryAny = (typeUrl: string, value: unknown) => chainRegistry().encodeAsAny({ typeUrl, value });

describe("tx results as an SDK v0.50 node reports them", () => {
  let dn: Devnet;
  const clients: SigningStargateClient[] = [];
  let tenant1: string;
  let tenant2: string;
  let faucet: string;

  /** A direct-signing client; with the billing/sku codecs registered, as providerd's. */
  async function client(name: string): Promise<SigningStargateClient> {
    const wallet = await DirectSecp256k1HdWallet.fromMnemonic(dn.account(name).mnemonic, {
      prefix: "manifest",
    });
    const c = await SigningStargateClient.connectWithSigner(dn.rpc, wallet, {
      registry: chainRegistry(),
      gasPrice: GasPrice.fromString("0.025umfx"),
      broadcastPollIntervalMs: 100,
      broadcastTimeoutMs: 20_000,
    });
    clients.push(c);
    return c;
  }

  const send = (from: string, to: string, amount: string): EncodeObject => ({
    typeUrl: "/cosmos.bank.v1beta1.MsgSend",
    value: { fromAddress: from, toAddress: to, amount: [{ denom: "umfx", amount }] },
  });

  before(async () => {
    dn = await devnet();
    tenant1 = dn.account("tenant1").address;
    tenant2 = dn.account("tenant2").address;
    faucet = dn.account("faucet").address;
  });

  after(async () => {
    for (const c of clients) c.disconnect();
    await dn?.stop();
  });

  it("a failed message's DeliverTx log starts with baseapp's message-index prefix", async () => {
    const c = await client("tenant1");
    const res = await c.signAndBroadcast(
      tenant1,
      [send(tenant1, tenant2, "1"), send(tenant1, tenant2, HUGE)],
      FEE,
    );
    assert.equal(res.code, 5);
    assert.match(
      res.rawLog ?? "",
      new RegExp(
        `^failed to execute message; message index: 1: spendable balance \\d+umfx is smaller than ${HUGE}umfx: insufficient funds$`,
      ),
    );
  });

  it("so does the Simulate error cosmjs throws before broadcasting", async () => {
    const c = await client("tenant1");
    await assert.rejects(c.simulate(tenant1, [send(tenant1, tenant2, HUGE)], ""), (err: Error) => {
      assert.match(
        err.message,
        new RegExp(
          `^Query failed with \\(6\\): rpc error: code = Unknown desc = failed to execute message; message index: 0: spendable balance \\d+umfx is smaller than ${HUGE}umfx: insufficient funds With gas wanted: '\\d+' and gas used: '\\d+' : unknown request$`,
        ),
      );
      return true;
    });
  });

  it("tags every event of MsgExec's i-th inner message with authz_msg_index=i", async () => {
    const granter = await client("tenant1");
    const grant = await granter.signAndBroadcast(
      tenant1,
      [
        {
          typeUrl: "/cosmos.authz.v1beta1.MsgGrant",
          value: {
            granter: tenant1,
            grantee: tenant2,
            grant: {
              authorization: {
                typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
                value: GenericAuthorization.encode({ msg: "/cosmos.bank.v1beta1.MsgSend" }).finish(),
              },
            },
          },
        },
      ],
      FEE,
    );
    assertIsDeliverTxSuccess(grant);

    const grantee = await client("tenant2");
    const inner = [send(tenant1, tenant2, "11"), send(tenant1, faucet, "22")].map((m) => ({
      typeUrl: m.typeUrl,
      value: MsgSend.encode(m.value as MsgSend).finish(),
    }));
    const res = await grantee.signAndBroadcast(
      tenant2,
      [{ typeUrl: "/cosmos.authz.v1beta1.MsgExec", value: { grantee: tenant2, msgs: inner } }],
      FEE,
    );
    assertIsDeliverTxSuccess(res);

    const tagged = res.events.filter((e) => e.attributes.some((a) => a.key === "authz_msg_index"));
    const transfers = tagged.filter((e) => e.type === "transfer");
    assert.deepEqual(
      transfers.map((e) => e.attributes.map((a) => [a.key, a.value])),
      [
        [
          ["recipient", tenant2],
          ["sender", tenant1],
          ["amount", "11umfx"],
          ["authz_msg_index", "0"],
          ["msg_index", "0"],
        ],
        [
          ["recipient", faucet],
          ["sender", tenant1],
          ["amount", "22umfx"],
          ["authz_msg_index", "1"],
          ["msg_index", "0"],
        ],
      ],
    );
    for (const e of tagged) {
      const keys = e.attributes.map((a) => a.key);
      assert.deepEqual(
        keys.slice(-2),
        ["authz_msg_index", "msg_index"],
        `${e.type}: order of the index tags`,
      );
    }
    const spent = tagged.filter((e) => e.type === "coin_spent");
    assert.deepEqual(
      spent.map((e) => e.attributes.find((a) => a.key === "authz_msg_index")?.value),
      ["0", "1"],
    );
    // The MsgExec's own `message` event is not an inner event.
    const action = res.events.find(
      (e) => e.type === "message" && e.attributes.some((a) => a.key === "action"),
    );
    assert.ok(action && !action.attributes.some((a) => a.key === "authz_msg_index"));

    // Indexed like any attribute: a tenant tool can search for the second inner message.
    const found = await grantee.searchTx(`transfer.authz_msg_index='1' AND transfer.recipient='${faucet}'`);
    assert.deepEqual(
      found.map((t) => t.hash),
      [res.transactionHash],
    );
  });

  it("a failed inner message fails the MsgExec with the inner code, under the outer message's index", async () => {
    // Uses the MsgSend grant tenant1 gave tenant2 above.
    const grantee = await client("tenant2");
    const inner = [send(tenant1, tenant2, "1"), send(tenant1, tenant2, HUGE)].map((m) => ({
      typeUrl: m.typeUrl,
      value: MsgSend.encode(m.value as MsgSend).finish(),
    }));
    const res = await grantee.signAndBroadcast(
      tenant2,
      [{ typeUrl: "/cosmos.authz.v1beta1.MsgExec", value: { grantee: tenant2, msgs: inner } }],
      FEE,
    );
    assert.equal(res.code, 5);
    // A real node also names the inner message in Go's proto text form (docs/devnet.md, Differences).
    assert.match(
      res.rawLog ?? "",
      new RegExp(
        `^failed to execute message; message index: 0: .*spendable balance \\d+umfx is smaller than ${HUGE}umfx: insufficient funds$`,
      ),
    );
  });

  it("on providerd's sub-signer path: MsgExec of billing messages tags each one's events", async () => {
    const provider = dn.account("provider").address;
    const small = dn.keys.skus.find((k) => k.name === "docker-small")!.uuid;
    const tenant = await client("tenant1");
    const leases: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await tenant.signAndBroadcast(
        tenant1,
        [
          {
            typeUrl: MsgCreateLease.typeUrl,
            value: MsgCreateLease.fromPartial({ tenant: tenant1, items: [{ skuUuid: small, quantity: 1n }] }),
          },
        ],
        FEE,
      );
      assertIsDeliverTxSuccess(created);
      leases.push(MsgCreateLeaseResponse.decode(created.msgResponses[0]!.value).leaseUuid);
    }
    // The provider key grants its sub-signer (here the faucet account) the billing messages.
    const owner = await client("provider");
    const grants = [MsgAcknowledgeLease.typeUrl, MsgRejectLease.typeUrl].map((msg) => ({
      typeUrl: "/cosmos.authz.v1beta1.MsgGrant",
      value: {
        granter: provider,
        grantee: faucet,
        grant: {
          authorization: {
            typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
            value: GenericAuthorization.encode({ msg }).finish(),
          },
        },
      },
    }));
    assertIsDeliverTxSuccess(await owner.signAndBroadcast(provider, grants, FEE));

    const lane = await client("faucet");
    const inner = [
      registryAny(
        MsgAcknowledgeLease.typeUrl,
        MsgAcknowledgeLease.fromPartial({ sender: provider, leaseUuids: [leases[0]!] }),
      ),
      registryAny(
        MsgRejectLease.typeUrl,
        MsgRejectLease.fromPartial({ sender: provider, leaseUuids: [leases[1]!] }),
      ),
    ];
    const res = await lane.signAndBroadcast(
      faucet,
      [{ typeUrl: "/cosmos.authz.v1beta1.MsgExec", value: { grantee: faucet, msgs: inner } }],
      FEE,
    );
    assertIsDeliverTxSuccess(res);
    const pick = (type: string) =>
      res.events.find((e) => e.type === type)?.attributes.map((a) => [a.key, a.value]);
    assert.deepEqual(pick("lease_acknowledged"), [
      ["lease_uuid", leases[0]],
      ["tenant", tenant1],
      ["provider_uuid", dn.keys.provider_uuid],
      ["acknowledged_by", provider],
      ["authz_msg_index", "0"],
      ["msg_index", "0"],
    ]);
    const rejected = pick("lease_rejected") ?? [];
    assert.deepEqual(rejected.slice(-2), [
      ["authz_msg_index", "1"],
      ["msg_index", "0"],
    ]);
    assert.deepEqual(
      rejected.find(([k]) => k === "rejection_reason"),
      ["rejection_reason", ""],
    );
    const found = await lane.searchTx(
      `lease_rejected.authz_msg_index='1' AND lease_rejected.lease_uuid='${leases[1]}'`,
    );
    assert.deepEqual(
      found.map((t) => t.hash),
      [res.transactionHash],
    );
  });
});
