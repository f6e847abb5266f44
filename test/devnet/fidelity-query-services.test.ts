/**
 * The query services every SDK v0.50 app registers, read through the generated cosmjs-types
 * clients on cosmjs' protobuf RPC (what manifestjs' RPC query clients do) and through
 * StargateClient, against a real devnet process: x/auth and x/bank extras, the tx service's
 * GetTx/GetTxsEvent, cosmos.base.node Config/Status and cosmos.base.tendermint GetNodeInfo.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DirectSecp256k1HdWallet } from "@cosmjs/proto-signing";
import {
  assertIsDeliverTxSuccess,
  createProtobufRpcClient,
  GasPrice,
  QueryClient,
  SigningStargateClient,
  StargateClient,
  setupTxExtension,
} from "@cosmjs/stargate";
import { Comet38Client } from "@cosmjs/tendermint-rpc";
import { BaseAccount, ModuleAccount } from "cosmjs-types/cosmos/auth/v1beta1/auth";
import { QueryClientImpl as AuthQuery } from "cosmjs-types/cosmos/auth/v1beta1/query";
import { QueryClientImpl as BankQuery } from "cosmjs-types/cosmos/bank/v1beta1/query";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { ServiceClientImpl as NodeService } from "cosmjs-types/cosmos/base/node/v1beta1/query";
import { ServiceClientImpl as TendermintService } from "cosmjs-types/cosmos/base/tendermint/v1beta1/query";
import { OrderBy, ServiceClientImpl as TxService } from "cosmjs-types/cosmos/tx/v1beta1/service";
import { encodeAddress, moduleAddress } from "../../src/devnet/address.ts";
import { type Devnet, devnet } from "../support/index.ts";
import { stopCosmjsReconnectsAfterDisconnect } from "./helpers.ts";

stopCosmjsReconnectsAfterDisconnect();

const page = (key: Uint8Array, limit: bigint) => ({
  key,
  offset: 0n,
  limit,
  countTotal: false,
  reverse: false,
});

describe("SDK v0.50 query services on the devnet", () => {
  let dn: Devnet;
  let comet: Comet38Client;
  let client: StargateClient;
  let signer: SigningStargateClient;
  let auth: AuthQuery;
  let bank: BankQuery;
  let txs: TxService;
  let nodeSvc: NodeService;
  let tm: TendermintService;
  let tenant1: string;
  let tenant2: string;
  const hashes: string[] = [];

  before(async () => {
    dn = await devnet();
    tenant1 = dn.account("tenant1").address;
    tenant2 = dn.account("tenant2").address;
    comet = await Comet38Client.connect(dn.rpc);
    const rpc = createProtobufRpcClient(new QueryClient(comet));
    auth = new AuthQuery(rpc);
    bank = new BankQuery(rpc);
    txs = new TxService(rpc);
    nodeSvc = new NodeService(rpc);
    tm = new TendermintService(rpc);
    client = await StargateClient.connect(dn.rpc);
    const wallet = await DirectSecp256k1HdWallet.fromMnemonic(dn.account("tenant1").mnemonic, {
      prefix: "manifest",
    });
    signer = await SigningStargateClient.connectWithSigner(dn.rpc, wallet, {
      gasPrice: GasPrice.fromString("0.025umfx"),
      broadcastPollIntervalMs: 100,
      broadcastTimeoutMs: 20_000,
    });
    for (const amount of ["3", "5"]) {
      const res = await signer.sendTokens(
        tenant1,
        tenant2,
        [{ denom: "umfx", amount }],
        "auto",
        `send ${amount}`,
      );
      assertIsDeliverTxSuccess(res);
      hashes.push(res.transactionHash);
    }
  });

  after(async () => {
    comet?.disconnect();
    client?.disconnect();
    signer?.disconnect();
    await dn?.stop();
  });

  it("auth: Params, Bech32Prefix, Accounts (paged) and the module accounts", async () => {
    assert.deepEqual((await auth.Params()).params, {
      maxMemoCharacters: 256n,
      txSigLimit: 7n,
      txSizeCostPerByte: 10n,
      sigVerifyCostEd25519: 590n,
      sigVerifyCostSecp256k1: 1000n,
    });
    assert.equal((await auth.Bech32Prefix()).bech32Prefix, "manifest");
    const bytes = (await auth.AddressStringToBytes({ addressString: tenant1 })).addressBytes;
    assert.equal(bytes.length, 20);
    assert.equal((await auth.AddressBytesToString({ addressBytes: bytes })).addressString, tenant1);
    await assert.rejects(
      auth.AddressStringToBytes({ addressString: " " }),
      /Query failed with \(18\): empty address string is not allowed: invalid request$/,
    );
    await assert.rejects(
      auth.AddressStringToBytes({ addressString: encodeAddress(bytes, "cosmos") }),
      /Query failed with \(18\): invalid Bech32 prefix; expected manifest, got cosmos: invalid request$/,
    );
    await assert.rejects(
      auth.AddressBytesToString({ addressBytes: new Uint8Array() }),
      /Query failed with \(18\): empty address bytes is not allowed: invalid request$/,
    );

    const seen: string[] = [];
    let key: Uint8Array = new Uint8Array();
    do {
      const res = await auth.Accounts({ pagination: page(key, 2n) });
      assert.ok(res.accounts.length <= 2);
      for (const a of res.accounts) {
        const address =
          a.typeUrl === "/cosmos.auth.v1beta1.ModuleAccount"
            ? ModuleAccount.decode(a.value).baseAccount?.address
            : BaseAccount.decode(a.value).address;
        seen.push(address ?? "");
      }
      key = res.pagination?.nextKey ?? new Uint8Array();
    } while (key.length > 0);
    for (const a of dn.keys.accounts) assert.ok(seen.includes(a.address), a.name);
    assert.equal(new Set(seen).size, seen.length, "no account twice across pages");

    const modules = await auth.ModuleAccounts();
    const decoded = modules.accounts.map((a) => {
      assert.equal(a.typeUrl, "/cosmos.auth.v1beta1.ModuleAccount");
      const m = ModuleAccount.decode(a.value);
      return [m.name, m.permissions, m.baseAccount?.address];
    });
    assert.deepEqual(decoded, [
      ["bonded_tokens_pool", ["burner", "staking"], moduleAddress("bonded_tokens_pool", "manifest")],
      ["distribution", [], moduleAddress("distribution", "manifest")],
      ["fee_collector", [], moduleAddress("fee_collector", "manifest")],
      ["gov", ["burner"], moduleAddress("gov", "manifest")],
    ]);
    const fee = await auth.ModuleAccountByName({ name: "fee_collector" });
    assert.equal(ModuleAccount.decode(fee.account!.value).name, "fee_collector");
    // StargateClient understands the ModuleAccount type a real node returns.
    const feeAccount = await client.getAccount(moduleAddress("fee_collector", "manifest"));
    assert.equal(feeAccount?.address, moduleAddress("fee_collector", "manifest"));
    await assert.rejects(
      auth.ModuleAccountByName({ name: "mint" }),
      /Query failed with \(22\): .*: key not found$/,
    );
  });

  it("bank: Params, SpendableBalances, TotalSupply, DenomsMetadata, SendEnabled", async () => {
    assert.deepEqual((await bank.Params()).params, { sendEnabled: [], defaultSendEnabled: true });
    const spendable = await bank.SpendableBalances({ address: tenant1, pagination: undefined });
    assert.deepEqual(spendable.balances, [...(await client.getAllBalances(tenant1))]);
    const first = await bank.SpendableBalances({ address: tenant1, pagination: page(new Uint8Array(), 1n) });
    assert.equal(first.balances.length, 1);
    assert.equal(new TextDecoder().decode(first.pagination?.nextKey), spendable.balances[1]?.denom);
    await assert.rejects(
      bank.SpendableBalances({ address: "manifest1nope", pagination: undefined }),
      /Query failed with \(18\): rpc error: code = InvalidArgument desc = invalid address: decoding bech32 failed: .*: invalid request$/,
    );

    // AllBalances pages by key as SpendableBalances does (the second page starts at next_key).
    const firstAll = await bank.AllBalances({
      address: tenant1,
      pagination: page(new Uint8Array(), 1n),
      resolveDenom: false,
    });
    assert.deepEqual(firstAll.balances, spendable.balances.slice(0, 1));
    const secondAll = await bank.AllBalances({
      address: tenant1,
      pagination: page(firstAll.pagination?.nextKey ?? new Uint8Array(), 1n),
      resolveDenom: false,
    });
    assert.deepEqual(secondAll.balances, spendable.balances.slice(1, 2));

    const supply = await bank.TotalSupply({ pagination: undefined });
    const denoms = supply.supply.map((c) => c.denom);
    assert.deepEqual(denoms, [...denoms].sort());
    for (const c of supply.supply) assert.ok(BigInt(c.amount) > 0n, c.denom);
    for (const denom of ["umfx", "upwr"]) {
      const one = (await bank.SupplyOf({ denom })).amount;
      assert.deepEqual(
        supply.supply.find((c) => c.denom === denom),
        one,
      );
    }
    await assert.rejects(
      bank.DenomMetadata({ denom: "unothere" }),
      /Query failed with \(22\): rpc error: code = NotFound desc = client metadata for denom unothere: key not found$/,
    );
    await assert.rejects(
      bank.DenomMetadata({ denom: "1bad" }),
      /Query failed with \(18\): rpc error: code = InvalidArgument desc = invalid denom: 1bad: invalid request$/,
    );
    assert.deepEqual((await bank.SendEnabled({ denoms: ["umfx"], pagination: undefined })).sendEnabled, []);
  });

  it("tx service: GetTxsEvent by query, newest first, paged; GetTx by hash", async () => {
    const query = `message.sender='${tenant1}'`;
    const desc = await txs.GetTxsEvent({
      events: [],
      query,
      orderBy: OrderBy.ORDER_BY_DESC,
      page: 1n,
      limit: 1n,
    });
    assert.equal(desc.total, 2n);
    assert.equal(desc.txResponses.length, 1);
    const latest = desc.txResponses[0]!;
    assert.equal(latest.txhash, hashes[1]);
    assert.equal(latest.code, 0);
    assert.equal(latest.rawLog, "");
    assert.match(latest.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.match(latest.data, /^[0-9A-F]+$/);
    assert.equal(latest.tx?.typeUrl, "/cosmos.tx.v1beta1.Tx");
    assert.ok(latest.events.some((e) => e.type === "transfer"));
    assert.equal(desc.txs[0]?.body?.memo, "send 5");
    assert.deepEqual(MsgSend.decode(desc.txs[0]!.body!.messages[0]!.value).amount, [
      { denom: "umfx", amount: "5" },
    ]);
    const asc = await txs.GetTxsEvent({
      events: [],
      query,
      orderBy: OrderBy.ORDER_BY_ASC,
      page: 0n,
      limit: 0n,
    });
    assert.deepEqual(
      asc.txResponses.map((t) => t.txhash),
      hashes,
    );

    const one = await txs.GetTx({ hash: hashes[0]! });
    assert.equal(one.txResponse?.txhash, hashes[0]);
    assert.equal(one.txResponse?.height, BigInt((await client.getTx(hashes[0]!))!.height));
    assert.equal(one.tx?.body?.memo, "send 3");
    // cosmjs' own TxExtension reads the same service.
    const ext = QueryClient.withExtensions(comet, setupTxExtension);
    assert.equal((await ext.tx.getTx(hashes[0]!)).txResponse?.txhash, hashes[0]);

    await assert.rejects(
      txs.GetTx({ hash: "AB".repeat(32) }),
      /^Error: Query failed with \(22\): rpc error: code = NotFound desc = tx not found: (AB){32}: key not found$/,
    );
    await assert.rejects(
      txs.GetTxsEvent({ events: [], query: "", orderBy: 0, page: 0n, limit: 0n }),
      /Query failed with \(18\): rpc error: code = InvalidArgument desc = query cannot be empty: invalid request$/,
    );
    await assert.rejects(
      txs.GetTxsEvent({ events: [], query, orderBy: 0, page: 9n, limit: 0n }),
      /Query failed with \(6\): rpc error: code = Internal desc = page should be within \[1, 1\] range, given 9: unknown request$/,
    );
  });

  it("cosmos.base.node Config and Status", async () => {
    const config = await nodeSvc.Config();
    // app.toml's defaults as a v0.50 node reports them: strings for pruning, the gas price as a DecCoin.
    assert.deepEqual(config, {
      minimumGasPrice: "0.000025000000000000umfx",
      pruningKeepRecent: "0",
      pruningInterval: "0",
      haltHeight: 0n,
    });
    const status = await nodeSvc.Status();
    assert.equal(status.earliestStoreHeight, 0n, "v0.50 leaves it unset");
    const height = Number(status.height);
    const block = await comet.block(height);
    assert.deepEqual(status.appHash, block.block.header.appHash);
    assert.deepEqual(status.validatorHash, block.block.header.nextValidatorsHash);
    assert.equal(
      Number(status.timestamp!.seconds) * 1000,
      Math.floor(block.block.header.time.getTime() / 1000) * 1000,
    );
  });

  it("cosmos.base.tendermint GetNodeInfo: the CometBFT node and the ledger version", async () => {
    const info = await tm.GetNodeInfo();
    const cometStatus = await comet.status();
    assert.equal(info.defaultNodeInfo?.network, "fred-devnet-1");
    assert.equal(info.defaultNodeInfo?.version, cometStatus.nodeInfo.version);
    assert.equal(info.defaultNodeInfo?.defaultNodeId, Buffer.from(cometStatus.nodeInfo.id).toString("hex"));
    assert.equal(info.defaultNodeInfo?.other?.rpcAddress, dn.rpc.replace(/^http/, "tcp"));
    assert.equal(info.applicationVersion?.appName, "manifestd");
    assert.equal(info.applicationVersion?.version, "v2.3.0");
    assert.equal(info.applicationVersion?.cosmosSdkVersion, "v0.50.14");
  });
});
