/**
 * SIGN_MODE_LEGACY_AMINO_JSON (what Keplr, Ledger and cosmos-kit sign with) against a real
 * devnet: cosmjs' amino signer (Secp256k1HdWallet) in a SigningStargateClient, on the
 * project's cosmjs line (0.39) and on the 0.32 line tenant tooling uses, sends bank, authz,
 * x/billing and x/sku messages, including empty meta_hash, limit 0, empty key and empty
 * reason; each tx is committed with signer mode 127. A signature over another doc is refused.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Secp256k1HdWallet } from "@cosmjs/amino";
import { GasPrice, SigningStargateClient } from "@cosmjs/stargate";
import { Secp256k1HdWallet as Secp256k1HdWallet032 } from "cosmjs-amino-032";
import { Registry as Registry032 } from "cosmjs-proto-signing-032";
import {
  AminoTypes as AminoTypes032,
  createDefaultAminoConverters as defaultAmino032,
  defaultRegistryTypes as defaultTypes032,
  GasPrice as GasPrice032,
  SigningStargateClient as SigningStargateClient032,
} from "cosmjs-stargate-032";
import { GenericAuthorization } from "cosmjs-types/cosmos/authz/v1beta1/authz";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { SignMode } from "cosmjs-types/cosmos/tx/signing/v1beta1/signing";
import { AuthInfo, TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import {
  billingAminoConverters,
  billingRegistryTypes,
  chainAminoTypes,
  chainRegistry,
  MsgAcknowledgeLease,
  MsgCancelLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgCreateSKU,
  MsgFundCredit,
  MsgWithdraw,
  Unit,
} from "../../src/chain/proto/index.ts";
import { rpc } from "./helpers.ts";
import { type Chain, startChain } from "./modules/harness.ts";

const FAST = { broadcastPollIntervalMs: 100, broadcastTimeoutMs: 20_000 };

let chain: Chain;
let small: string;
const clients: { disconnect(): void }[] = [];

/** A SigningStargateClient on cosmjs 0.39 with an amino-only wallet. */
async function amino039(name: string): Promise<SigningStargateClient> {
  const wallet = await Secp256k1HdWallet.fromMnemonic(chain.devnet.account(name).mnemonic, {
    prefix: "manifest",
  });
  const registry = chainRegistry();
  const c = await SigningStargateClient.connectWithSigner(chain.devnet.url, wallet, {
    registry,
    aminoTypes: chainAminoTypes(registry),
    gasPrice: GasPrice.fromString("0.025umfx"),
    ...FAST,
  });
  clients.push(c);
  return c;
}

/** The same on cosmjs 0.32 (its own Registry, AminoTypes and default converters). */
async function amino032(name: string): Promise<SigningStargateClient032> {
  const wallet = await Secp256k1HdWallet032.fromMnemonic(chain.devnet.account(name).mnemonic, {
    prefix: "manifest",
  });
  const c = await SigningStargateClient032.connectWithSigner(chain.devnet.url, wallet, {
    // Its own (0.32) Registry class; our codecs plug into either line.
    registry: new Registry032([...defaultTypes032, ...billingRegistryTypes] as never) as never,
    aminoTypes: new AminoTypes032({ ...defaultAmino032(), ...billingAminoConverters }),
    gasPrice: GasPrice032.fromString("0.025umfx"),
    ...FAST,
  });
  clients.push(c);
  return c;
}

/** Committed with code 0, and signed in SIGN_MODE_LEGACY_AMINO_JSON. */
async function assertAminoSigned(res: Pick<Sent, "code" | "rawLog" | "transactionHash">) {
  assert.equal(res.code, 0, res.rawLog);
  const found = await rpc(chain.devnet.url, "tx", {
    hash: Buffer.from(res.transactionHash, "hex").toString("base64"),
  });
  const raw = TxRaw.decode(Buffer.from(found.result.tx, "base64"));
  const mode = AuthInfo.decode(raw.authInfoBytes).signerInfos[0]?.modeInfo?.single?.mode;
  assert.equal(mode, SignMode.SIGN_MODE_LEGACY_AMINO_JSON);
}

before(async () => {
  chain = await startChain({ authority: "faucet", checkEveryBlock: false });
  small = chain.devnet.keys.skus.find((s) => s.name === "docker-small")!.uuid;
});
after(async () => {
  for (const c of clients) c.disconnect();
  await chain.stop();
});

/** What both cosmjs lines' DeliverTxResponse carry that these tests read. */
interface Sent {
  readonly code: number;
  readonly rawLog?: string | undefined;
  readonly transactionHash: string;
  readonly msgResponses: readonly { readonly typeUrl: string; readonly value: Uint8Array<ArrayBufferLike> }[];
  readonly events: readonly { type: string; attributes: readonly { key: string; value: string }[] }[];
}

/** Anything with cosmjs' signAndBroadcast, on either line. */
interface Sender {
  signAndBroadcast(
    signer: string,
    msgs: { typeUrl: string; value: unknown }[],
    fee: "auto" | { amount: { denom: string; amount: string }[]; gas: string },
    memo?: string,
  ): Promise<Sent>;
}

/** Signs one message with `client`, broadcasts it and checks it was committed amino-signed. */
async function sendOne(
  client: Sender,
  signer: string,
  typeUrl: string,
  value: unknown,
  opts: { fee?: { amount: { denom: string; amount: string }[]; gas: string }; memo?: string } = {},
) {
  const res = await client.signAndBroadcast(signer, [{ typeUrl, value }], opts.fee ?? "auto", opts.memo);
  await assertAminoSigned(res);
  return res;
}

const leaseOf = (res: { msgResponses: readonly { value: Uint8Array }[] }) =>
  MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;

describe("amino JSON signing on cosmjs 0.39", () => {
  it("bank, billing (empty meta_hash, empty reason, limit 0, empty key) and sku messages", async () => {
    const t1 = chain.address("tenant1");
    const provider = chain.address("provider");
    const tenant = await amino039("tenant1");
    await assertAminoSigned(
      await tenant.sendTokens(t1, chain.address("tenant2"), [{ denom: "umfx", amount: "10" }], "auto"),
    );
    const amount = { denom: "upwr", amount: "7" };
    await sendOne(
      tenant,
      t1,
      MsgFundCredit.typeUrl,
      MsgFundCredit.fromPartial({ sender: t1, tenant: t1, amount }),
    );
    const newLease = MsgCreateLease.fromPartial({ tenant: t1, items: [{ skuUuid: small, quantity: 1n }] });
    const lease = leaseOf(
      await sendOne(tenant, t1, MsgCreateLease.typeUrl, newLease, { memo: "amino <create> & sign" }),
    );
    const lease2 = leaseOf(await sendOne(tenant, t1, MsgCreateLease.typeUrl, newLease));
    await sendOne(
      tenant,
      t1,
      MsgCancelLease.typeUrl,
      MsgCancelLease.fromPartial({ tenant: t1, leaseUuids: [lease2] }),
    );

    const prov = await amino039("provider");
    const ack = MsgAcknowledgeLease.fromPartial({ sender: provider, leaseUuids: [lease] });
    await sendOne(prov, provider, MsgAcknowledgeLease.typeUrl, ack);
    await chain.advance(30);
    const withdraw = MsgWithdraw.fromPartial({
      sender: provider,
      providerUuid: chain.devnet.keys.provider_uuid,
    });
    // Settlement at the next block's time costs more than the simulation at this one's.
    const fee = { amount: [{ denom: "umfx", amount: "20000" }], gas: "400000" };
    await sendOne(prov, provider, MsgWithdraw.typeUrl, withdraw, { fee });
    await sendOne(
      prov,
      provider,
      MsgCloseLease.typeUrl,
      MsgCloseLease.fromPartial({ sender: provider, leaseUuids: [lease] }),
    );

    const admin = chain.address("faucet");
    const sku = MsgCreateSKU.fromPartial({
      authority: admin,
      providerUuid: chain.devnet.keys.provider_uuid,
      name: "amino-signed",
      unit: Unit.UNIT_PER_HOUR,
      basePrice: { denom: "upwr", amount: "3600" },
    });
    await sendOne(await amino039("faucet"), admin, MsgCreateSKU.typeUrl, sku);
  });

  it("authz MsgGrant (with expiration), MsgExec and MsgRevoke", async () => {
    const t1 = chain.address("tenant1");
    const t2 = chain.address("tenant2");
    const granter = await amino039("tenant1");
    const expiration = { seconds: BigInt(Math.floor(Date.now() / 1000) + 7 * 86400), nanos: 0 };
    const authorization = {
      typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
      value: GenericAuthorization.encode({ msg: "/cosmos.bank.v1beta1.MsgSend" }).finish(),
    };
    await sendOne(granter, t1, "/cosmos.authz.v1beta1.MsgGrant", {
      granter: t1,
      grantee: t2,
      grant: { authorization, expiration },
    });
    const inner = {
      typeUrl: "/cosmos.bank.v1beta1.MsgSend",
      value: MsgSend.encode({
        fromAddress: t1,
        toAddress: t2,
        amount: [{ denom: "umfx", amount: "4" }],
      }).finish(),
    };
    const exec = await sendOne(await amino039("tenant2"), t2, "/cosmos.authz.v1beta1.MsgExec", {
      grantee: t2,
      msgs: [inner],
    });
    assert.ok(exec.events.some((e) => e.attributes.some((a) => a.key === "authz_msg_index")));
    await sendOne(granter, t1, "/cosmos.authz.v1beta1.MsgRevoke", {
      granter: t1,
      grantee: t2,
      msgTypeUrl: "/cosmos.bank.v1beta1.MsgSend",
    });
  });

  it("refuses an amino signature made over another chain id, as the SDK words it", async () => {
    const t1 = chain.address("tenant1");
    const c = await amino039("tenant1");
    const acct = await c.getAccount(t1);
    assert.ok(acct);
    const signed = await c.sign(
      t1,
      [
        {
          typeUrl: "/cosmos.bank.v1beta1.MsgSend",
          value: { fromAddress: t1, toAddress: t1, amount: [{ denom: "umfx", amount: "1" }] },
        },
      ],
      { amount: [{ denom: "umfx", amount: "5000" }], gas: "200000" },
      "",
      { accountNumber: acct.accountNumber, sequence: acct.sequence, chainId: "another-chain" },
    );
    const r = await rpc(chain.devnet.url, "broadcast_tx_sync", {
      tx: Buffer.from(TxRaw.encode(signed).finish()).toString("base64"),
    });
    assert.equal(r.result.code, 4);
    assert.equal(
      r.result.log,
      `signature verification failed; please verify account number (${acct.accountNumber}) and chain-id (fred-devnet-1): (unable to verify single signer signature): unauthorized`,
    );
  });
});

describe("amino JSON signing on cosmjs 0.32 (the line tenant tooling uses)", () => {
  it("bank and billing messages with empty fields", async () => {
    const t2 = chain.address("tenant2");
    const c = await amino032("tenant2");
    await assertAminoSigned(
      await c.sendTokens(t2, chain.address("tenant1"), [{ denom: "umfx", amount: "3" }], "auto"),
    );
    const create = MsgCreateLease.fromPartial({ tenant: t2, items: [{ skuUuid: small, quantity: 2n }] });
    const lease = leaseOf(await sendOne(c, t2, MsgCreateLease.typeUrl, create));
    await sendOne(
      c,
      t2,
      MsgCancelLease.typeUrl,
      MsgCancelLease.fromPartial({ tenant: t2, leaseUuids: [lease] }),
    );
  });
});
