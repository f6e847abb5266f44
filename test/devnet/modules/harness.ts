/**
 * Test support for the Manifest modules: a real devnet process, one cosmjs
 * SigningStargateClient per dev account with a Registry holding our codecs, raw ABCI queries
 * through our query codecs, time travel, and the ledger invariants read back over RPC.
 */
import assert from "node:assert/strict";
import { DirectSecp256k1HdWallet, type EncodeObject, Registry } from "@cosmjs/proto-signing";
import {
  type DeliverTxResponse,
  defaultRegistryTypes,
  QueryClient,
  SigningStargateClient,
  setupAuthzExtension,
  setupBankExtension,
} from "@cosmjs/stargate";
import { Comet38Client } from "@cosmjs/tendermint-rpc";
import { TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import {
  billingRegistryTypes,
  type Lease,
  type MessageCodec,
  QueryCreditAccountRequest,
  QueryCreditAccountResponse,
  QueryCreditAccountsRequest,
  QueryCreditAccountsResponse,
  QueryLeaseRequest,
  QueryLeaseResponse,
  QueryLeasesRequest,
  QueryLeasesResponse,
  QuerySKUsRequest,
  QuerySKUsResponse,
  toBytes,
} from "../../../src/chain/proto/index.ts";
import { coinsFromProto } from "../../../src/devnet/coins.ts";
import {
  checkLedger,
  checkTransition,
  type LedgerSnapshot,
} from "../../../src/devnet/economics/invariants.ts";
import { type Devnet, devnet } from "../../support/index.ts";
import { rpc } from "../helpers.ts";

export const registry = new Registry([...defaultRegistryTypes, ...billingRegistryTypes]);
/** Generous fixed fee: gas 400 000 at the default price. */
export const FEE = { amount: [{ denom: "umfx", amount: "20000" }], gas: "400000" };

export interface Chain {
  devnet: Devnet;
  query: ReturnType<
    typeof QueryClient.withExtensions<
      ReturnType<typeof setupBankExtension>,
      ReturnType<typeof setupAuthzExtension>
    >
  >;
  comet: Comet38Client;
  address(name: string): string;
  client(name: string): Promise<SigningStargateClient>;
  /** Signs and broadcasts; waits for the block; returns the result (code may be non-zero). */
  send(name: string, msgs: EncodeObject[], fee?: typeof FEE): Promise<DeliverTxResponse>;
  /**
   * Signs and submits with broadcast_tx_sync only, returning the CheckTx answer. (cosmjs's
   * broadcastTx leaves a 60 s timer behind when CheckTx rejects, which keeps test processes alive.)
   */
  broadcastSync(
    name: string,
    msgs: EncodeObject[],
    fee?: typeof FEE,
  ): Promise<{ code: number; codespace: string; log: string }>;
  abci<Req, Res>(path: string, req: MessageCodec<Req>, value: Req, res: MessageCodec<Res>): Promise<Res>;
  /** The next block's time jumps `seconds` ahead. */
  advance(seconds: number): Promise<void>;
  /** Produces an empty block now (EndBlock runs). */
  produceBlock(): Promise<void>;
  /** Header time of a block, in ns. */
  blockTimeNs(height: number): Promise<bigint>;
  /** Codespace and code of a committed tx, read back from the node. */
  txResult(hash: string): Promise<{ code: number; codespace: string; log: string }>;
  snapshot(): Promise<LedgerSnapshot>;
  /** Checks ledger invariants now and against the previous check. */
  assertInvariants(): Promise<void>;
  stop(): Promise<void>;
}

export interface ChainOptions {
  /** Extra `fred devnet start` flags (the block time is always 0s: a block per tx). */
  args?: string[];
  /** Restart the node with this dev account as module authority (POA_ADMIN_ADDRESS). */
  authority?: string;
  /** Check the ledger invariants after every block this harness produces (default true). */
  checkEveryBlock?: boolean;
}

export async function startChain(opts: ChainOptions = {}): Promise<Chain> {
  const dn = await devnet({ args: opts.args ?? [] });
  if (opts.authority !== undefined) {
    // The authority is read at start; keys exist only after the first start, so restart once.
    await dn.restart({ env: { POA_ADMIN_ADDRESS: dn.account(opts.authority).address } });
  }
  const comet = await Comet38Client.connect(dn.rpc);
  const query = QueryClient.withExtensions(comet, setupBankExtension, setupAuthzExtension);
  const clients = new Map<string, SigningStargateClient>();
  let previous: LedgerSnapshot | undefined;

  const chain: Chain = {
    devnet: dn,
    query,
    comet,
    address: (name) => dn.account(name).address,
    async client(name) {
      let c = clients.get(name);
      if (c === undefined) {
        const wallet = await DirectSecp256k1HdWallet.fromMnemonic(dn.account(name).mnemonic, {
          prefix: "manifest",
        });
        c = await SigningStargateClient.connectWithSigner(dn.rpc, wallet, {
          registry,
          broadcastPollIntervalMs: 50,
        });
        clients.set(name, c);
      }
      return c;
    },
    async send(name, msgs, fee = FEE) {
      const c = await chain.client(name);
      const res = await c.signAndBroadcast(chain.address(name), msgs, fee);
      // With --block-time 0s every tx is its own block: this checks after every block.
      if (opts.checkEveryBlock ?? true) await chain.assertInvariants();
      return res;
    },
    async broadcastSync(name, msgs, fee = FEE) {
      const c = await chain.client(name);
      const signed = await c.sign(chain.address(name), msgs, fee, "");
      const bytes = TxRaw.encode(signed).finish();
      const r = await rpc(dn.rpc, "broadcast_tx_sync", { tx: Buffer.from(bytes).toString("base64") });
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      return { code: r.result.code, codespace: r.result.codespace, log: r.result.log };
    },
    async abci(path, req, value, res) {
      const out = await query.queryAbci(path, toBytes(req, value));
      return res.decode(out.value);
    },
    async advance(seconds) {
      const r = await rpc(dn.rpc, "devnet_advance_time", { seconds });
      assert.equal(r.error, undefined, JSON.stringify(r.error));
    },
    async produceBlock() {
      const r = await rpc(dn.rpc, "devnet_produce_block", {});
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      if (opts.checkEveryBlock ?? true) await chain.assertInvariants();
    },
    async blockTimeNs(height) {
      const b = await comet.block(height);
      const ms = BigInt(b.block.header.time.getTime());
      return ms * 1_000_000n + BigInt(b.block.header.time.nanoseconds ?? 0);
    },
    async txResult(hash) {
      const r = await rpc(dn.rpc, "tx", {
        hash: Buffer.from(hash, "hex").toString("base64"),
        prove: false,
      });
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      return {
        code: r.result.tx_result.code,
        codespace: r.result.tx_result.codespace,
        log: r.result.tx_result.log,
      };
    },
    async snapshot() {
      const leases: Lease[] = [];
      let key: Uint8Array = new Uint8Array();
      for (;;) {
        const page = await chain.abci(
          "/liftedinit.billing.v1.Query/Leases",
          QueryLeasesRequest,
          {
            pagination: { key, offset: 0n, limit: 1000n, countTotal: false, reverse: false },
            stateFilter: 0,
          },
          QueryLeasesResponse,
        );
        leases.push(...page.leases);
        key = page.pagination?.nextKey ?? new Uint8Array();
        if (key.length === 0) break;
      }
      const accounts = (
        await chain.abci(
          "/liftedinit.billing.v1.Query/CreditAccounts",
          QueryCreditAccountsRequest,
          { pagination: undefined },
          QueryCreditAccountsResponse,
        )
      ).creditAccounts;
      const balances = new Map<string, ReturnType<typeof coinsFromProto>>();
      for (const acc of accounts)
        balances.set(acc.creditAddress, coinsFromProto(await query.bank.allBalances(acc.creditAddress)));
      const skus = await chain.abci(
        "/liftedinit.sku.v1.Query/SKUs",
        QuerySKUsRequest,
        { pagination: undefined, activeOnly: false },
        QuerySKUsResponse,
      );
      const domains = new Map<string, { leaseUuid: string; serviceName: string }>();
      for (const l of leases)
        for (const i of l.items)
          if (i.customDomain !== "" && (l.state === 1 || l.state === 2))
            domains.set(i.customDomain, { leaseUuid: l.uuid, serviceName: i.serviceName });
      const block = await comet.block();
      const blockNs = BigInt(block.block.header.time.getTime()) * 1_000_000n;
      const supply = new Map<string, bigint>();
      for (const denom of [dn.keys.pwr_denom ?? "upwr", "umfx"])
        supply.set(denom, BigInt((await query.bank.supplyOf(denom)).amount));
      return {
        blockNs,
        pendingTimeoutSeconds: 1800n,
        leases,
        accounts,
        balanceOf: (a) => balances.get(a) ?? new Map(),
        domains,
        skuProvider: new Map(skus.skus.map((s) => [s.uuid, s.providerUuid])),
        leaseSequence: BigInt(leases.length),
        supply,
      };
    },
    async assertInvariants() {
      const snap = await chain.snapshot();
      assert.deepEqual(checkLedger(snap), []);
      if (previous !== undefined) assert.deepEqual(checkTransition(previous, snap), []);
      previous = snap;
    },
    async stop() {
      for (const c of clients.values()) c.disconnect();
      comet.disconnect();
      await dn.stop();
    },
  };
  return chain;
}

/** Attributes of every event of `type`, as key → value records (duplicate keys: last wins). */
export function eventsOf(
  res: { events: readonly { type: string; attributes: readonly { key: string; value: string }[] }[] },
  type: string,
): Record<string, string>[] {
  return res.events
    .filter((e) => e.type === type)
    .map((e) => Object.fromEntries(e.attributes.map((a) => [a.key, a.value])));
}

/** An EncodeObject for one of our Msgs, filled with proto3 defaults. */
export function msg<T>(codec: MessageCodec<T>, value: Partial<T>): EncodeObject {
  return { typeUrl: codec.typeUrl, value: codec.fromPartial(value as never) };
}

export async function getLease(chain: Chain, uuid: string): Promise<Lease> {
  const res = await chain.abci(
    "/liftedinit.billing.v1.Query/Lease",
    QueryLeaseRequest,
    { leaseUuid: uuid },
    QueryLeaseResponse,
  );
  assert.ok(res.lease, `lease ${uuid} missing`);
  return res.lease;
}

export async function getCreditAccount(chain: Chain, tenant: string) {
  return chain.abci(
    "/liftedinit.billing.v1.Query/CreditAccount",
    QueryCreditAccountRequest,
    { tenant, pagination: undefined },
    QueryCreditAccountResponse,
  );
}

export const S = 1_000_000_000n;
