/**
 * The billing economics on a real devnet, with numbers worked out from the ledger rules:
 * withdraw cursors in both modes, reservation refusal, reject/cancel reasons and roles, the
 * acknowledgement gates (34, 35), pending expiry in EndBlock, and the three auto-close paths.
 * Time moves with devnet_advance_time; the ledger invariants are checked after every block.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  LeaseState,
  MsgAcknowledgeLease,
  MsgCancelLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgRejectLease,
  MsgWithdraw,
  MsgWithdrawResponse,
  QueryProviderWithdrawableRequest,
  QueryProviderWithdrawableResponse,
  timestampToNanos,
} from "../../../src/chain/proto/index.ts";
import { rpc } from "../helpers.ts";
import { type Chain, eventsOf, getCreditAccount, getLease, msg, S, startChain } from "./harness.ts";

let chain: Chain;
let provider: string;
let providerUuid: string;
const sku = (name: string) => chain.devnet.keys.skus.find((s) => s.name === name)!.uuid;
const enc = new TextEncoder();
const dec = new TextDecoder();

before(async () => {
  chain = await startChain({ args: ["--tenants", "6"] });
  provider = chain.address("provider");
  providerUuid = chain.devnet.keys.provider_uuid;
});
after(() => chain.stop());

async function create(tenant: string, skuName: string, quantity: bigint, count = 1): Promise<string[]> {
  const t = chain.address(tenant);
  const msgs = Array.from({ length: count }, () =>
    msg(MsgCreateLease, { tenant: t, items: [{ skuUuid: sku(skuName), quantity, serviceName: "" }] }),
  );
  const res = await chain.send(tenant, msgs, {
    amount: [{ denom: "umfx", amount: "200000" }],
    gas: String(400_000 * count),
  });
  assert.equal(res.code, 0, res.rawLog);
  return res.msgResponses.map((r) => MsgCreateLeaseResponse.decode(r.value).leaseUuid);
}

async function ack(uuids: string[]) {
  const res = await chain.send("provider", [
    msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: uuids }),
  ]);
  assert.equal(res.code, 0, res.rawLog);
  return res;
}

/** A provider-wide page touches up to `limit` leases: give it gas for a full page. */
const withdrawWide = (limit: bigint, key: Uint8Array = new Uint8Array()) =>
  chain.send("provider", [msg(MsgWithdraw, { sender: provider, providerUuid, limit, key })], {
    amount: [{ denom: "umfx", amount: "500000" }],
    gas: "10000000",
  });

describe("billing economics on the devnet", () => {
  let five: string[] = [];

  it("pages provider-wide withdrawals with an exclusive cursor and the query with an inclusive one", async () => {
    five = (await create("tenant3", "docker-small", 1n, 5)).sort();
    const acked = await ack(five);
    assert.deepEqual(eventsOf(acked, "batch_acknowledged"), [
      { lease_count: "5", provider_uuid: providerUuid, acknowledged_by: provider, msg_index: "0" },
    ]);
    const ackNs = timestampToNanos((await getLease(chain, five[0]!)).acknowledgedAt!);
    await chain.advance(10);
    await chain.produceBlock();
    await chain.assertInvariants();

    const q = (limit: bigint, key = new Uint8Array()) =>
      chain.abci(
        "/liftedinit.billing.v1.Query/ProviderWithdrawable",
        QueryProviderWithdrawableRequest,
        { providerUuid, pagination: { key, offset: 0n, limit, countTotal: false, reverse: false } },
        QueryProviderWithdrawableResponse,
      );
    const head = await chain.comet.block();
    const secs = (BigInt(head.block.header.time.getTime()) * 1_000_000n - ackNs) / S;
    const all = await q(100n);
    assert.equal(all.leaseCount, 5n);
    // 5 leases × 100 upwr/s × whole seconds since the common ack
    assert.deepEqual(all.amounts, [{ denom: "upwr", amount: String(500n * secs) }]);
    const firstTwo = await q(2n);
    assert.equal(firstTwo.leaseCount, 2n);
    assert.equal(dec.decode(firstTwo.pagination!.nextKey), five[2], "query cursor = first unread");

    const pages: string[][] = [];
    let key: Uint8Array = new Uint8Array();
    for (;;) {
      const res = await withdrawWide(2n, key);
      assert.equal(res.code, 0, res.rawLog);
      const out = MsgWithdrawResponse.decode(res.msgResponses[0]!.value);
      const ids = eventsOf(res, "provider_withdraw").map((e) => e.lease_uuid!);
      pages.push(ids);
      assert.equal(out.withdrawalCount, BigInt(ids.length));
      const batch = eventsOf(res, "batch_withdraw")[0]!;
      assert.equal(batch.lease_count, String(ids.length));
      assert.equal(batch.auto_closed, "0");
      assert.equal(batch.failed_lease_count, "0");
      assert.equal(out.hasMore, out.nextKey.length > 0);
      if (out.hasMore)
        assert.equal(dec.decode(out.nextKey), ids[ids.length - 1], "msg cursor = last processed");
      await chain.assertInvariants();
      if (!out.hasMore) break;
      key = out.nextKey;
    }
    assert.deepEqual(pages, [five.slice(0, 2), five.slice(2, 4), five.slice(4)]);
  });

  it("fails a specific-lease withdraw with nothing to settle (code 15) and refuses bad cursors at CheckTx", async () => {
    const [pending] = await create("tenant3", "docker-small", 1n);
    const res = await chain.send("provider", [
      msg(MsgWithdraw, { sender: provider, leaseUuids: [pending!] }),
    ]);
    assert.equal(res.code, 15);
    const check = (m: Partial<MsgWithdraw>) =>
      chain.broadcastSync("provider", [msg(MsgWithdraw, { sender: provider, ...m })]);
    const keyed = await check({ leaseUuids: [pending!], key: enc.encode("x") });
    assert.deepEqual([keyed.code, keyed.codespace], [25, "billing"]);
    assert.deepEqual([(await check({ providerUuid, limit: 101n })).code], [9]);
    assert.deepEqual([(await check({ providerUuid, key: new Uint8Array(65) })).code], [25]);
    assert.deepEqual([(await check({})).code], [25]);
    await chain.assertInvariants();
  });

  it("refuses a lease whose reservation the free credit cannot cover (code 4), changing nothing", async () => {
    const t4 = chain.address("tenant4");
    // docker-large 400 upwr/s × 1000 × 3600 s = 1 440 000 000 > 1 000 000 000 credit
    const res = await chain.send("tenant4", [
      msg(MsgCreateLease, {
        tenant: t4,
        items: [{ skuUuid: sku("docker-large"), quantity: 1000n, serviceName: "" }],
      }),
    ]);
    assert.equal(res.code, 4);
    assert.equal((await chain.txResult(res.transactionHash)).codespace, "billing");
    const credit = await getCreditAccount(chain, t4);
    assert.equal(credit.creditAccount?.pendingLeaseCount, 0n);
    assert.deepEqual(credit.creditAccount?.reservedAmounts, []);
    await chain.assertInvariants();
  });

  it("records reject and cancel reasons and enforces who may do them", async () => {
    const [a, b, c] = await create("tenant3", "docker-medium", 1n, 3);
    const rej = await chain.send("provider", [
      msg(MsgRejectLease, { sender: provider, leaseUuids: [a!, b!], reason: "no capacity\u0007" }),
    ]);
    assert.equal(rej.code, 0, rej.rawLog);
    const t3 = chain.address("tenant3");
    assert.deepEqual(
      eventsOf(rej, "lease_rejected").map((e) => [e.lease_uuid, e.rejected_by, e.rejection_reason]),
      [
        [a, provider, "no capacity"],
        [b, provider, "no capacity"],
      ],
    );
    assert.deepEqual(eventsOf(rej, "batch_rejected")[0], {
      lease_count: "2",
      provider_uuid: providerUuid,
      rejected_by: provider,
      msg_index: "0",
    });
    const ra = await getLease(chain, a!);
    assert.equal(ra.state, LeaseState.LEASE_STATE_REJECTED);
    assert.equal(ra.rejectionReason, "no capacity\u0007", "stored verbatim");

    const foreign = await chain.send("tenant4", [
      msg(MsgCancelLease, { tenant: chain.address("tenant4"), leaseUuids: [c!] }),
    ]);
    assert.equal(foreign.code, 6);
    const cancel = await chain.send("tenant3", [msg(MsgCancelLease, { tenant: t3, leaseUuids: [c!] })]);
    assert.equal(cancel.code, 0, cancel.rawLog);
    assert.deepEqual(eventsOf(cancel, "lease_cancelled"), [
      { lease_uuid: c, tenant: t3, provider_uuid: providerUuid, cancelled_by: t3, msg_index: "0" },
    ]);
    assert.equal((await getLease(chain, c!)).rejectionReason, "cancelled by tenant");
    const twice = await chain.send("tenant3", [msg(MsgCancelLease, { tenant: t3, leaseUuids: [c!] })]);
    assert.equal(twice.code, 22);
    const closePending = await chain.send("tenant3", [
      msg(MsgCloseLease, { sender: t3, leaseUuids: [a!], reason: "" }),
    ]);
    assert.equal(closePending.code, 3);
    await chain.assertInvariants();
  });

  it("refuses acknowledgements that would push a tenant past max_leases_per_tenant (code 35)", async () => {
    // default cap 100: reach 90 active in rounds of 10 (pending cap 10), then acknowledge 10 + 9 more.
    for (let round = 0; round < 9; round++) await ack(await create("tenant2", "billing-only", 1n, 10));
    const nine = await create("tenant2", "billing-only", 1n, 9);
    await ack(nine);
    const ten = await create("tenant2", "billing-only", 1n, 10);
    const res = await chain.send("provider", [
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: ten }),
    ]);
    assert.equal(res.code, 35);
    assert.equal(
      (await getCreditAccount(chain, chain.address("tenant2"))).creditAccount?.activeLeaseCount,
      99n,
    );
    const one = await chain.send("provider", [
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [ten[0]!] }),
    ]);
    assert.equal(one.code, 0, one.rawLog);
    await chain.assertInvariants();
  });

  it("expires pending leases in EndBlock strictly after pending_timeout, and gates late acknowledgements (code 34)", async () => {
    const [late] = await create("tenant3", "docker-small", 1n);
    await chain.advance(1801);
    const res = await chain.send("provider", [
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [late!] }),
    ]);
    assert.equal(res.code, 34);
    const lease = await getLease(chain, late!);
    assert.equal(lease.state, LeaseState.LEASE_STATE_EXPIRED, "expired by the EndBlock of the same block");
    assert.equal(timestampToNanos(lease.expiredAt!), await chain.blockTimeNs(res.height));
    const results = await rpc(chain.devnet.rpc, "block_results", { height: String(res.height) });
    const expired = (
      results.result.finalize_block_events as { type: string; attributes: { key: string; value: string }[] }[]
    )
      .filter((e) => e.type === "lease_expired")
      .map((e) => Object.fromEntries(e.attributes.map((a) => [a.key, a.value])));
    const mine = expired.find((e) => e.lease_uuid === late);
    assert.deepEqual(mine, {
      lease_uuid: late,
      tenant: chain.address("tenant3"),
      provider_uuid: providerUuid,
      reason: "pending_timeout",
      mode: "EndBlock",
    });
    assert.ok(expired.length <= 100);
    // the 9 leases left PENDING by the previous test expired too
    assert.equal(
      (await getCreditAccount(chain, chain.address("tenant2"))).creditAccount?.pendingLeaseCount,
      0n,
    );
    await chain.assertInvariants();
  });

  it("auto-closes exhausted leases on each path with its own events", async () => {
    // docker-large 400 upwr/s × 690 = 276 000 upwr/s; reservation × 3600 = 993 600 000 ≤ 1e9 credit
    const [l4] = await create("tenant4", "docker-large", 690n);
    const [l5] = await create("tenant5", "docker-large", 690n);
    const [l6] = await create("tenant6", "docker-large", 690n);
    await ack([l4!, l5!, l6!]);
    // 3700 s × 276 000 = 1 021 200 000 > 1 000 000 000: every one of them is exhausted
    await chain.advance(3700);

    const specific = await chain.send("provider", [
      msg(MsgWithdraw, { sender: provider, leaseUuids: [l4!] }),
    ]);
    assert.equal(specific.code, 0, specific.rawLog);
    assert.deepEqual(eventsOf(specific, "provider_withdraw"), [
      {
        lease_uuid: l4,
        amount: "1000000000upwr",
        provider_uuid: providerUuid,
        payout_address: provider,
        auto_closed: "true",
        msg_index: "0",
      },
    ]);
    assert.deepEqual(eventsOf(specific, "lease_closed"), []);
    const c4 = await getLease(chain, l4!);
    assert.equal(c4.state, LeaseState.LEASE_STATE_CLOSED);
    assert.equal(c4.closureReason, "credit exhausted");
    await chain.assertInvariants();

    const t5 = chain.address("tenant5");
    const closed = await chain.send("tenant5", [
      msg(MsgCloseLease, { sender: t5, leaseUuids: [l5!], reason: "bye" }),
    ]);
    assert.equal(closed.code, 0, closed.rawLog);
    const ev = eventsOf(closed, "lease_closed")[0]!;
    assert.equal(ev.closed_by, "credit_exhaustion");
    assert.equal(ev.closure_reason, "credit exhausted");
    assert.equal(ev.settled_amounts, "1000000000upwr");
    assert.equal(ev.active_lease_count, "0");
    await chain.assertInvariants();

    // more than 100 ACTIVE leases exist now: walk every page
    const autoClosed: Record<string, string>[] = [];
    const withdrawn: Record<string, string>[] = [];
    let autoCount = 0;
    let key: Uint8Array = new Uint8Array();
    for (;;) {
      const wide = await withdrawWide(100n, key);
      assert.equal(wide.code, 0, wide.rawLog);
      autoClosed.push(...eventsOf(wide, "lease_auto_closed"));
      withdrawn.push(...eventsOf(wide, "provider_withdraw"));
      autoCount += Number(eventsOf(wide, "batch_withdraw")[0]!.auto_closed);
      const out = MsgWithdrawResponse.decode(wide.msgResponses[0]!.value);
      if (!out.hasMore) break;
      key = out.nextKey;
    }
    assert.deepEqual(autoClosed, [
      {
        lease_uuid: l6,
        tenant: chain.address("tenant6"),
        provider_uuid: providerUuid,
        amount: "1000000000upwr",
        payout_address: provider,
        reason: "credit_exhausted",
        msg_index: "0",
      },
    ]);
    assert.equal(autoCount, 1);
    assert.equal(withdrawn.find((e) => e.lease_uuid === l6)?.auto_closed, "true");
    assert.equal((await getLease(chain, l6!)).state, LeaseState.LEASE_STATE_CLOSED);
    for (const t of ["tenant4", "tenant5", "tenant6"]) {
      const credit = await getCreditAccount(chain, chain.address(t));
      assert.deepEqual(credit.balances, [], `${t} credit fully paid out`);
      assert.deepEqual(credit.creditAccount?.reservedAmounts, []);
    }
    await chain.assertInvariants();
  });
});
