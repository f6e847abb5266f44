/**
 * x/billing and x/sku queries as a tenant SDK sees them: a cosmjs protobuf RPC client (the
 * transport manifestjs' generated query clients sit on) against a real devnet process.
 * CreditEstimate follows manifest-ledger's keeper, and query errors carry the ABCI code and
 * log suffix the SDK's gRPC-to-ABCI mapping gives.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createProtobufRpcClient, type ProtobufRpcClient } from "@cosmjs/stargate";
import {
  type MessageCodec,
  MsgAcknowledgeLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgFundCredit,
  QueryCreditEstimateRequest,
  QueryCreditEstimateResponse,
  QueryLeaseByCustomDomainRequest,
  QueryLeaseRequest,
  QueryLeasesByProviderRequest,
  QuerySKURequest,
  toBytes,
} from "../../src/chain/proto/index.ts";
import { deriveCreditAddress } from "../../src/devnet/economics/credit-address.ts";
import { type Chain, getLease, msg, startChain } from "./modules/harness.ts";

let chain: Chain;
let rpcClient: ProtobufRpcClient;
let t1: string;
let provider: string;
let small: string;
/** tenant1's ACTIVE leases, in creation order. */
const active: string[] = [];

before(async () => {
  chain = await startChain({ checkEveryBlock: false });
  rpcClient = createProtobufRpcClient(chain.query);
  t1 = chain.address("tenant1");
  provider = chain.address("provider");
  small = chain.devnet.keys.skus.find((s) => s.name === "docker-small")!.uuid;
});
after(() => chain.stop());

async function call<Req, Res>(
  service: "liftedinit.billing.v1.Query" | "liftedinit.sku.v1.Query",
  method: string,
  req: MessageCodec<Req>,
  value: Req,
  res: MessageCodec<Res>,
): Promise<Res> {
  return res.decode(await rpcClient.request(service, method, toBytes(req, value)));
}

const estimate = (tenant: string) =>
  call(
    "liftedinit.billing.v1.Query",
    "CreditEstimate",
    QueryCreditEstimateRequest,
    { tenant },
    QueryCreditEstimateResponse,
  );

describe("CreditEstimate as manifest-ledger answers it", () => {
  it("reports no runway and no balances for a tenant with no ACTIVE lease", async () => {
    // A second denom in the credit account: it is not burnt, so it is not reported.
    const fund = await chain.send("tenant1", [
      msg(MsgFundCredit, { sender: t1, tenant: t1, amount: { denom: "umfx", amount: "5000000" } }),
    ]);
    assert.equal(fund.code, 0, fund.rawLog);
    const e = await estimate(t1);
    assert.deepEqual(e, {
      currentBalance: [],
      totalRatePerSecond: [],
      estimatedDurationSeconds: 0n,
      activeLeaseCount: 0n,
    });
  });

  it("still reports nothing for a PENDING lease, then the burnt denom only once it is ACTIVE", async () => {
    const created = await chain.send("tenant1", [
      msg(MsgCreateLease, { tenant: t1, items: [{ skuUuid: small, quantity: 2n, serviceName: "" }] }),
    ]);
    assert.equal(created.code, 0, created.rawLog);
    const uuid = MsgCreateLeaseResponse.decode(created.msgResponses[0]!.value).leaseUuid;
    assert.equal((await estimate(t1)).estimatedDurationSeconds, 0n, "PENDING burns nothing");

    const ack = await chain.send("provider", [
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [uuid] }),
    ]);
    assert.equal(ack.code, 0, ack.rawLog);
    const item = (await getLease(chain, uuid)).items[0]!;
    const rate = BigInt(item.lockedPrice!.amount) * item.quantity;
    const credit = deriveCreditAddress(t1);
    const upwr = BigInt((await chain.query.bank.balance(credit, "upwr")).amount);
    const umfx = BigInt((await chain.query.bank.balance(credit, "umfx")).amount);
    assert.ok(umfx > 0n, "the credit account also holds umfx");

    const e = await estimate(t1);
    assert.deepEqual(e.currentBalance, [{ denom: "upwr", amount: upwr.toString() }]);
    assert.deepEqual(e.totalRatePerSecond, [{ denom: "upwr", amount: rate.toString() }]);
    assert.equal(e.estimatedDurationSeconds, upwr / rate);
    assert.equal(e.activeLeaseCount, 1n);
    active.push(uuid);
  });

  it("sums a second ACTIVE lease's rate, and reports nothing again once every lease is closed", async () => {
    const created = await chain.send("tenant1", [
      msg(MsgCreateLease, { tenant: t1, items: [{ skuUuid: small, quantity: 3n, serviceName: "" }] }),
    ]);
    assert.equal(created.code, 0, created.rawLog);
    const uuid = MsgCreateLeaseResponse.decode(created.msgResponses[0]!.value).leaseUuid;
    const ack = await chain.send("provider", [
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [uuid] }),
    ]);
    assert.equal(ack.code, 0, ack.rawLog);
    active.push(uuid);
    let rate = 0n;
    for (const u of active)
      for (const item of (await getLease(chain, u)).items)
        rate += BigInt(item.lockedPrice!.amount) * item.quantity;
    const upwr = BigInt((await chain.query.bank.balance(deriveCreditAddress(t1), "upwr")).amount);
    const two = await estimate(t1);
    assert.deepEqual(two.totalRatePerSecond, [{ denom: "upwr", amount: rate.toString() }]);
    assert.deepEqual(two.currentBalance, [{ denom: "upwr", amount: upwr.toString() }]);
    assert.equal(two.estimatedDurationSeconds, upwr / rate);
    assert.equal(two.activeLeaseCount, 2n);

    const closed = await chain.send("tenant1", [
      msg(MsgCloseLease, { sender: t1, leaseUuids: active, reason: "" }),
    ]);
    assert.equal(closed.code, 0, closed.rawLog);
    assert.deepEqual(await estimate(t1), {
      currentBalance: [],
      totalRatePerSecond: [],
      estimatedDurationSeconds: 0n,
      activeLeaseCount: 0n,
    });
  });
});

describe("billing and sku query errors through the SDK's gRPC-to-ABCI mapping", () => {
  const refused = (p: Promise<unknown>, code: number, log: string) =>
    assert.rejects(p, (err: Error) => {
      assert.equal(err.message, `Query failed with (${code}): ${log}`);
      return true;
    });

  it("NotFound → code 22 with `: key not found`", async () => {
    const missing = "01900000-0000-7000-8000-000000000000";
    await refused(
      call(
        "liftedinit.billing.v1.Query",
        "Lease",
        QueryLeaseRequest,
        { leaseUuid: missing },
        QueryLeaseRequest,
      ),
      22,
      `rpc error: code = NotFound desc = lease ${missing} not found: key not found`,
    );
    await refused(
      call("liftedinit.sku.v1.Query", "SKU", QuerySKURequest, { uuid: missing }, QuerySKURequest),
      22,
      `rpc error: code = NotFound desc = sku ${missing} not found: key not found`,
    );
    await refused(
      call(
        "liftedinit.billing.v1.Query",
        "CreditEstimate",
        QueryCreditEstimateRequest,
        { tenant: chain.address("faucet") },
        QueryCreditEstimateRequest,
      ),
      22,
      `rpc error: code = NotFound desc = credit account for ${chain.address("faucet")} not found: key not found`,
    );
  });

  it("InvalidArgument → code 18 with `: invalid request`", async () => {
    await refused(
      call(
        "liftedinit.billing.v1.Query",
        "LeaseByCustomDomain",
        QueryLeaseByCustomDomainRequest,
        { customDomain: " " },
        QueryLeaseByCustomDomainRequest,
      ),
      18,
      "rpc error: code = InvalidArgument desc = custom_domain cannot be empty: invalid request",
    );
    await refused(
      call(
        "liftedinit.billing.v1.Query",
        "LeasesByProvider",
        QueryLeasesByProviderRequest,
        { providerUuid: "not-a-uuid", pagination: undefined, stateFilter: 0 },
        QueryLeasesByProviderRequest,
      ),
      18,
      "rpc error: code = InvalidArgument desc = invalid provider_uuid: not-a-uuid: invalid request",
    );
  });

  it("any other status (ResourceExhausted) → code 6 with `: unknown request`", async () => {
    await refused(
      call(
        "liftedinit.billing.v1.Query",
        "LeasesByProvider",
        QueryLeasesByProviderRequest,
        {
          providerUuid: chain.devnet.keys.provider_uuid,
          pagination: {
            key: new Uint8Array(),
            offset: 20_001n,
            limit: 0n,
            countTotal: false,
            reverse: false,
          },
          stateFilter: 0,
        },
        QueryLeasesByProviderRequest,
      ),
      6,
      "rpc error: code = ResourceExhausted desc = offset scan limit exceeded: unknown request",
    );
  });
});
