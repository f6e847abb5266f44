/**
 * cosmjs end to end against a real devnet: a SigningStargateClient with our codecs funds
 * credit, creates leases, acknowledges them with the provider key and through an authz
 * MsgExec sub-signer, withdraws and closes, checking responses, events and the ledger
 * invariants after every block.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { GenericAuthorization } from "cosmjs-types/cosmos/authz/v1beta1/authz";
import { MsgExec, MsgGrant, MsgRevoke } from "cosmjs-types/cosmos/authz/v1beta1/tx";
import {
  LeaseState,
  MsgAcknowledgeLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgFundCredit,
  MsgFundCreditResponse,
  MsgRejectLease,
  MsgWithdraw,
  MsgWithdrawResponse,
  timestampToNanos,
  toBytes,
} from "../../../src/chain/proto/index.ts";
import { deriveCreditAddress } from "../../../src/devnet/economics/credit-address.ts";
import { type Chain, eventsOf, getCreditAccount, getLease, msg, S, startChain } from "./harness.ts";

let chain: Chain;
let t1: string;
let provider: string;
let small: string;

before(async () => {
  chain = await startChain();
  t1 = chain.address("tenant1");
  provider = chain.address("provider");
  small = chain.devnet.keys.skus.find((s) => s.name === "docker-small")!.uuid;
});
after(() => chain.stop());

async function createSmall(quantity: bigint, metaHash = new Uint8Array()): Promise<string> {
  const res = await chain.send("tenant1", [
    msg(MsgCreateLease, { tenant: t1, items: [{ skuUuid: small, quantity, serviceName: "" }], metaHash }),
  ]);
  assert.equal(res.code, 0, res.rawLog);
  return MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
}

describe("lease flow through cosmjs", () => {
  it("funds credit at the derived address and reports the new balance", async () => {
    const res = await chain.send("tenant1", [
      msg(MsgFundCredit, { sender: t1, tenant: t1, amount: { denom: "upwr", amount: "5000000" } }),
    ]);
    assert.equal(res.code, 0, res.rawLog);
    const out = MsgFundCreditResponse.decode(res.msgResponses[0]!.value);
    assert.equal(out.creditAddress, deriveCreditAddress(t1));
    // genesis credit 1 000 000 000 + 5 000 000
    assert.deepEqual(out.newBalance, { denom: "upwr", amount: "1005000000" });
    assert.deepEqual(eventsOf(res, "credit_funded"), [
      {
        tenant: t1,
        credit_address: out.creditAddress,
        sender: t1,
        amount: "5000000upwr",
        new_balance: "1005000000upwr",
        msg_index: "0",
      },
    ]);
    const msgEvent = eventsOf(res, "message").find((e) => e.action === MsgFundCredit.typeUrl);
    assert.deepEqual(msgEvent, {
      action: MsgFundCredit.typeUrl,
      sender: t1,
      module: "billing",
      msg_index: "0",
    });
    await chain.assertInvariants();
  });

  it("creates a lease with locked per-second prices and a reservation", async () => {
    const hash = new Uint8Array(32).fill(0xab);
    const res = await chain.send("tenant1", [
      msg(MsgCreateLease, {
        tenant: t1,
        items: [{ skuUuid: small, quantity: 2n, serviceName: "" }],
        metaHash: hash,
      }),
    ]);
    assert.equal(res.code, 0, res.rawLog);
    const uuid = MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
    assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // docker-small 360 000 upwr/hour → 100 upwr/s; × 2 = 200 upwr/s
    assert.deepEqual(eventsOf(res, "lease_created"), [
      {
        lease_uuid: uuid,
        tenant: t1,
        provider_uuid: chain.devnet.keys.provider_uuid,
        item_count: "1",
        total_rate_per_second: "200upwr",
        pending_lease_count: "1",
        created_by: "tenant",
        sender: t1,
        meta_hash: "ab".repeat(32),
        msg_index: "0",
      },
    ]);
    const lease = await getLease(chain, uuid);
    assert.equal(lease.state, LeaseState.LEASE_STATE_PENDING);
    assert.deepEqual(lease.items[0]!.lockedPrice, { denom: "upwr", amount: "100" });
    // reservation = 200 upwr/s × 3600 s
    assert.deepEqual(lease.reservation?.remainingAmounts, [{ denom: "upwr", amount: "720000" }]);
    const credit = await getCreditAccount(chain, t1);
    assert.deepEqual(credit.creditAccount?.reservedAmounts, [{ denom: "upwr", amount: "720000" }]);
    assert.deepEqual(credit.availableBalances, [{ denom: "upwr", amount: String(1_005_000_000 - 720_000) }]);
    await chain.assertInvariants();
  });

  it("refuses an acknowledgement from the tenant in the block (code 6, codespace billing), changing nothing", async () => {
    const uuid = await createSmall(1n);
    const res = await chain.send("tenant1", [msg(MsgAcknowledgeLease, { sender: t1, leaseUuids: [uuid] })]);
    assert.equal(res.code, 6);
    assert.ok(res.height > 0, "failed in a block, not at CheckTx");
    const result = await chain.txResult(res.transactionHash);
    assert.equal(result.codespace, "billing");
    assert.match(result.log, /unauthorized/);
    assert.deepEqual(eventsOf(res, "lease_acknowledged"), []);
    assert.equal((await getLease(chain, uuid)).state, LeaseState.LEASE_STATE_PENDING);
    await chain.assertInvariants();
  });

  it("acknowledges with the provider key, starting billing at the block time", async () => {
    const uuid = await createSmall(2n);
    const res = await chain.send("provider", [
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [uuid] }),
    ]);
    assert.equal(res.code, 0, res.rawLog);
    assert.deepEqual(eventsOf(res, "lease_acknowledged"), [
      {
        lease_uuid: uuid,
        tenant: t1,
        provider_uuid: chain.devnet.keys.provider_uuid,
        acknowledged_by: provider,
        msg_index: "0",
      },
    ]);
    const lease = await getLease(chain, uuid);
    assert.equal(lease.state, LeaseState.LEASE_STATE_ACTIVE);
    assert.equal(timestampToNanos(lease.acknowledgedAt!), await chain.blockTimeNs(res.height));
    assert.deepEqual(lease.lastSettledAt, lease.acknowledgedAt);
    await chain.assertInvariants();

    // 100 s later the provider withdraws exactly 200 upwr × whole seconds since the ack.
    await chain.advance(100);
    const before = BigInt((await chain.query.bank.balance(provider, "upwr")).amount);
    const w = await chain.send("provider", [msg(MsgWithdraw, { sender: provider, leaseUuids: [uuid] })]);
    assert.equal(w.code, 0, w.rawLog);
    const seconds = ((await chain.blockTimeNs(w.height)) - timestampToNanos(lease.acknowledgedAt!)) / S;
    assert.ok(seconds >= 100n);
    const amount = 200n * seconds;
    const out = MsgWithdrawResponse.decode(w.msgResponses[0]!.value);
    assert.deepEqual(out.totalAmounts, [{ denom: "upwr", amount: String(amount) }]);
    assert.equal(out.withdrawalCount, 1n);
    assert.equal(out.hasMore, false);
    assert.deepEqual(eventsOf(w, "provider_withdraw"), [
      {
        lease_uuid: uuid,
        amount: `${amount}upwr`,
        provider_uuid: chain.devnet.keys.provider_uuid,
        payout_address: provider,
        msg_index: "0",
      },
    ]);
    const paid = BigInt((await chain.query.bank.balance(provider, "upwr")).amount) - before;
    assert.equal(paid, amount);
    // sub-second carry: settled up to ack + whole seconds, not to the block time
    const settled = await getLease(chain, uuid);
    assert.equal(
      timestampToNanos(settled.lastSettledAt!),
      timestampToNanos(lease.acknowledgedAt!) + seconds * S,
    );
    // the tranche shrank by what was paid
    assert.deepEqual(settled.reservation?.remainingAmounts, [
      { denom: "upwr", amount: String(720_000n - amount) },
    ]);
    await chain.assertInvariants();

    const c = await chain.send("provider", [
      msg(MsgCloseLease, { sender: provider, leaseUuids: [uuid], reason: "maintenance" }),
    ]);
    assert.equal(c.code, 0, c.rawLog);
    const closed = eventsOf(c, "lease_closed")[0]!;
    assert.equal(closed.closed_by, "provider");
    assert.equal(closed.closure_reason, "maintenance");
    const final = await getLease(chain, uuid);
    assert.equal(final.state, LeaseState.LEASE_STATE_CLOSED);
    assert.equal(final.closureReason, "maintenance");
    assert.deepEqual(final.lastSettledAt, final.closedAt);
    assert.equal(
      closed.settled_amounts,
      `${200n * BigInt(closed.duration_seconds!)}upwr`.replace(/^0upwr$/, ""),
    );
    await chain.assertInvariants();
  });

  it("acknowledges through MsgExec with a sub-signer holding a generic grant, and refuses after revoke", async () => {
    const sub = chain.address("faucet");
    const ackUrl = MsgAcknowledgeLease.typeUrl;
    const grant = {
      typeUrl: "/cosmos.authz.v1beta1.MsgGrant",
      value: MsgGrant.fromPartial({
        granter: provider,
        grantee: sub,
        grant: {
          authorization: {
            typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
            value: GenericAuthorization.encode({ msg: ackUrl }).finish(),
          },
        },
      }),
    };
    const g = await chain.send("provider", [grant]);
    assert.equal(g.code, 0, g.rawLog);
    assert.deepEqual(eventsOf(g, "cosmos.authz.v1beta1.EventGrant")[0]?.grantee, JSON.stringify(sub));
    const grants = await chain.query.authz.grants(provider, sub, ackUrl);
    assert.equal(grants.grants.length, 1);
    assert.equal((await chain.query.authz.granteeGrants(sub)).grants[0]?.granter, provider);

    const uuid = await createSmall(1n);
    const exec = (inner: { typeUrl: string; value: Uint8Array }) => ({
      typeUrl: "/cosmos.authz.v1beta1.MsgExec",
      value: MsgExec.fromPartial({ grantee: sub, msgs: [inner] }),
    });
    const ack = {
      typeUrl: ackUrl,
      value: toBytes(MsgAcknowledgeLease, { sender: provider, leaseUuids: [uuid] }),
    };
    const res = await chain.send("faucet", [exec(ack)]);
    assert.equal(res.code, 0, res.rawLog);
    assert.deepEqual(
      eventsOf(res, "lease_acknowledged").map((e) => e.acknowledged_by),
      [provider],
    );
    assert.equal((await getLease(chain, uuid)).state, LeaseState.LEASE_STATE_ACTIVE);
    await chain.assertInvariants();

    // No grant for rejects: the whole MsgExec fails in the block with authz code 2.
    const other = await createSmall(1n);
    const rej = {
      typeUrl: MsgRejectLease.typeUrl,
      value: toBytes(MsgRejectLease, { sender: provider, leaseUuids: [other], reason: "x" }),
    };
    const denied = await chain.send("faucet", [exec(rej)]);
    assert.equal(denied.code, 2);
    assert.equal((await chain.txResult(denied.transactionHash)).codespace, "authz");
    assert.equal((await getLease(chain, other)).state, LeaseState.LEASE_STATE_PENDING);

    const revoke = {
      typeUrl: "/cosmos.authz.v1beta1.MsgRevoke",
      value: MsgRevoke.fromPartial({ granter: provider, grantee: sub, msgTypeUrl: ackUrl }),
    };
    assert.equal((await chain.send("provider", [revoke])).code, 0);
    const again = await chain.send("faucet", [
      exec({
        typeUrl: ackUrl,
        value: toBytes(MsgAcknowledgeLease, { sender: provider, leaseUuids: [other] }),
      }),
    ]);
    assert.equal(again.code, 2);
    assert.equal((await chain.query.authz.grants(provider, sub, "")).grants.length, 0);
    await chain.assertInvariants();
  });

  it("expires a grant at its expiration time", async () => {
    const sub = chain.address("tenant2");
    const head = await chain.comet.block();
    const expSeconds = BigInt(Math.floor(head.block.header.time.getTime() / 1000)) + 60n;
    const g = await chain.send("provider", [
      {
        typeUrl: "/cosmos.authz.v1beta1.MsgGrant",
        value: MsgGrant.fromPartial({
          granter: provider,
          grantee: sub,
          grant: {
            authorization: {
              typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
              value: GenericAuthorization.encode({ msg: MsgAcknowledgeLease.typeUrl }).finish(),
            },
            expiration: { seconds: expSeconds, nanos: 0 },
          },
        }),
      },
    ]);
    assert.equal(g.code, 0, g.rawLog);
    assert.equal((await chain.query.authz.granterGrants(provider)).grants.length, 1);
    await chain.advance(120);
    await chain.produceBlock();
    assert.equal((await chain.query.authz.granterGrants(provider)).grants.length, 0);
    const uuid = await createSmall(1n);
    const res = await chain.send("tenant2", [
      {
        typeUrl: "/cosmos.authz.v1beta1.MsgExec",
        value: MsgExec.fromPartial({
          grantee: sub,
          msgs: [
            {
              typeUrl: MsgAcknowledgeLease.typeUrl,
              value: toBytes(MsgAcknowledgeLease, { sender: provider, leaseUuids: [uuid] }),
            },
          ],
        }),
      },
    ]);
    assert.equal(res.code, 2);
    await chain.assertInvariants();
  });
});
