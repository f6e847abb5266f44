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
  type AminoConverter as AminoConverter032,
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
import { chainAminoTypes, chainRegistry } from "../../src/chain/amino-signing.ts";
import {
  billingAminoConverters,
  billingRegistryTypes,
  LeaseState,
  MsgAcknowledgeLease,
  MsgCancelLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgCreateSKU,
  MsgFundCredit,
  MsgRejectLease,
  MsgWithdraw,
  Unit,
} from "../../src/chain/proto/index.ts";
import { rpc } from "./helpers.ts";
import { type Chain, getLease, startChain } from "./modules/harness.ts";

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
  const c = await SigningStargateClient.connectWithSigner(chain.devnet.rpc, wallet, {
    registry,
    aminoTypes: chainAminoTypes(registry),
    gasPrice: GasPrice.fromString("0.025umfx"),
    ...FAST,
  });
  clients.push(c);
  return c;
}

/**
 * cosmjs 0.32 ships no x/authz amino converters (tenant tooling brings its own, as manifestjs
 * does); these adapt the project's to the 0.32 AminoTypes.
 */
function authzFor032(): Record<string, AminoConverter032> {
  const project = chainAminoTypes();
  const out: Record<string, AminoConverter032> = {};
  for (const name of ["MsgGrant", "MsgExec", "MsgRevoke"]) {
    const typeUrl = `/cosmos.authz.v1beta1.${name}`;
    const aminoType = `cosmos-sdk/${name}`;
    out[typeUrl] = {
      aminoType,
      toAmino: (value: unknown) => project.toAmino({ typeUrl, value }).value,
      fromAmino: (value: Record<string, unknown>) => project.fromAmino({ type: aminoType, value }).value,
    };
  }
  return out;
}

/** The same on cosmjs 0.32 (its own Registry, AminoTypes and default converters). */
async function amino032(name: string): Promise<SigningStargateClient032> {
  const wallet = await Secp256k1HdWallet032.fromMnemonic(chain.devnet.account(name).mnemonic, {
    prefix: "manifest",
  });
  const c = await SigningStargateClient032.connectWithSigner(chain.devnet.rpc, wallet, {
    // Its own (0.32) Registry class; our codecs plug into either line.
    registry: new Registry032([...defaultTypes032, ...billingRegistryTypes] as never) as never,
    aminoTypes: new AminoTypes032({ ...defaultAmino032(), ...authzFor032(), ...billingAminoConverters }),
    gasPrice: GasPrice032.fromString("0.025umfx"),
    ...FAST,
  });
  clients.push(c);
  return c;
}

/** Committed with code 0, and signed in SIGN_MODE_LEGACY_AMINO_JSON. */
async function assertAminoSigned(res: Pick<Sent, "code" | "rawLog" | "transactionHash">) {
  assert.equal(res.code, 0, res.rawLog);
  const found = await rpc(chain.devnet.rpc, "tx", {
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

const ELSEWHERE = "another-chain";
const selfSend = (address: string) => ({
  typeUrl: "/cosmos.bank.v1beta1.MsgSend",
  value: { fromAddress: address, toAddress: address, amount: [{ denom: "umfx", amount: "1" }] },
});
const SMALL_FEE = { amount: [{ denom: "umfx", amount: "5000" }], gas: "200000" };

/**
 * Each line: which dev accounts play tenant and grantee, how to connect, and a tx signed over
 * another chain id (the two lines type account numbers differently: bigint vs number).
 */
const lines: {
  line: string;
  tenant: string;
  other: string;
  connect(name: string): Promise<Sender>;
  signElsewhere(name: string): Promise<{ tx: TxRaw; accountNumber: string }>;
}[] = [
  {
    line: "0.39",
    tenant: "tenant1",
    other: "tenant2",
    connect: amino039,
    async signElsewhere(name) {
      const c = await amino039(name);
      const address = chain.address(name);
      const acct = (await c.getAccount(address))!;
      const tx = await c.sign(address, [selfSend(address)], SMALL_FEE, "", { ...acct, chainId: ELSEWHERE });
      return { tx, accountNumber: acct.accountNumber.toString() };
    },
  },
  {
    line: "0.32",
    tenant: "tenant2",
    other: "tenant1",
    connect: amino032,
    async signElsewhere(name) {
      const c = await amino032(name);
      const address = chain.address(name);
      const acct = (await c.getAccount(address))!;
      const tx = await c.sign(address, [selfSend(address)], SMALL_FEE, "", { ...acct, chainId: ELSEWHERE });
      return { tx, accountNumber: acct.accountNumber.toString() };
    },
  },
];

const FIXED_FEE = { amount: [{ denom: "umfx", amount: "20000" }], gas: "400000" };

for (const { line, tenant, other, connect, signElsewhere } of lines) {
  describe(`amino JSON signing on cosmjs ${line}`, () => {
    it("bank, billing (empty meta_hash, empty reason, limit 0, empty key) and sku messages", async () => {
      const t = chain.address(tenant);
      const provider = chain.address("provider");
      const c = await connect(tenant);
      const sent = await c.signAndBroadcast(
        t,
        [
          {
            typeUrl: "/cosmos.bank.v1beta1.MsgSend",
            value: {
              fromAddress: t,
              toAddress: chain.address(other),
              amount: [{ denom: "umfx", amount: "10" }],
            },
          },
        ],
        "auto",
      );
      await assertAminoSigned(sent);
      const amount = { denom: "upwr", amount: "7" };
      await sendOne(c, t, MsgFundCredit.typeUrl, MsgFundCredit.fromPartial({ sender: t, tenant: t, amount }));
      const newLease = MsgCreateLease.fromPartial({ tenant: t, items: [{ skuUuid: small, quantity: 1n }] });
      const lease = leaseOf(
        await sendOne(c, t, MsgCreateLease.typeUrl, newLease, { memo: "amino <create> & sign" }),
      );
      const cancelled = leaseOf(await sendOne(c, t, MsgCreateLease.typeUrl, newLease));
      const rejected = leaseOf(await sendOne(c, t, MsgCreateLease.typeUrl, newLease));
      await sendOne(
        c,
        t,
        MsgCancelLease.typeUrl,
        MsgCancelLease.fromPartial({ tenant: t, leaseUuids: [cancelled] }),
      );

      const prov = await connect("provider");
      await sendOne(
        prov,
        provider,
        MsgRejectLease.typeUrl,
        MsgRejectLease.fromPartial({ sender: provider, leaseUuids: [rejected] }),
      );
      const ack = MsgAcknowledgeLease.fromPartial({ sender: provider, leaseUuids: [lease] });
      await sendOne(prov, provider, MsgAcknowledgeLease.typeUrl, ack);
      await chain.advance(30);
      const withdraw = MsgWithdraw.fromPartial({
        sender: provider,
        providerUuid: chain.devnet.keys.provider_uuid,
      });
      // Settlement at the next block's time costs more than the simulation at this one's.
      await sendOne(prov, provider, MsgWithdraw.typeUrl, withdraw, { fee: FIXED_FEE });
      await sendOne(
        prov,
        provider,
        MsgCloseLease.typeUrl,
        MsgCloseLease.fromPartial({ sender: provider, leaseUuids: [lease] }),
      );
      const states = await Promise.all([lease, cancelled, rejected].map((u) => getLease(chain, u)));
      assert.deepEqual(
        states.map((l) => [l.state, l.rejectionReason, l.closureReason]),
        [
          [LeaseState.LEASE_STATE_CLOSED, "", ""],
          [LeaseState.LEASE_STATE_REJECTED, "cancelled by tenant", ""],
          [LeaseState.LEASE_STATE_REJECTED, "", ""],
        ],
      );

      const admin = chain.address("faucet");
      const sku = MsgCreateSKU.fromPartial({
        authority: admin,
        providerUuid: chain.devnet.keys.provider_uuid,
        name: `amino-signed-${line}`,
        unit: Unit.UNIT_PER_HOUR,
        basePrice: { denom: "upwr", amount: "3600" },
      });
      await sendOne(await connect("faucet"), admin, MsgCreateSKU.typeUrl, sku);
    });

    it("authz MsgGrant (with expiration), MsgExec and MsgRevoke", async () => {
      const granterAddress = chain.address(tenant);
      const granteeAddress = chain.address(other);
      const granter = await connect(tenant);
      const expiration = { seconds: BigInt(Math.floor(Date.now() / 1000) + 7 * 86400), nanos: 0 };
      const authorization = {
        typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
        value: GenericAuthorization.encode({ msg: "/cosmos.bank.v1beta1.MsgSend" }).finish(),
      };
      await sendOne(granter, granterAddress, "/cosmos.authz.v1beta1.MsgGrant", {
        granter: granterAddress,
        grantee: granteeAddress,
        grant: { authorization, expiration },
      });
      const inner = {
        typeUrl: "/cosmos.bank.v1beta1.MsgSend",
        value: MsgSend.encode({
          fromAddress: granterAddress,
          toAddress: granteeAddress,
          amount: [{ denom: "umfx", amount: "4" }],
        }).finish(),
      };
      const exec = await sendOne(await connect(other), granteeAddress, "/cosmos.authz.v1beta1.MsgExec", {
        grantee: granteeAddress,
        msgs: [inner],
      });
      const transfer = exec.events.find(
        (e) => e.type === "transfer" && e.attributes.some((a) => a.key === "authz_msg_index"),
      );
      assert.deepEqual(
        transfer?.attributes.map((a) => [a.key, a.value]),
        [
          ["recipient", granteeAddress],
          ["sender", granterAddress],
          ["amount", "4umfx"],
          ["authz_msg_index", "0"],
          ["msg_index", "0"],
        ],
      );
      await sendOne(granter, granterAddress, "/cosmos.authz.v1beta1.MsgRevoke", {
        granter: granterAddress,
        grantee: granteeAddress,
        msgTypeUrl: "/cosmos.bank.v1beta1.MsgSend",
      });
    });

    it("a failed message's log carries baseapp's message-index prefix", async () => {
      const t = chain.address(tenant);
      const c = await connect(tenant);
      const to = chain.address(other);
      const res = await c.signAndBroadcast(
        t,
        [1n, 10n ** 18n].map((n) => ({
          typeUrl: "/cosmos.bank.v1beta1.MsgSend",
          value: { fromAddress: t, toAddress: to, amount: [{ denom: "umfx", amount: n.toString() }] },
        })),
        FIXED_FEE,
      );
      assert.equal(res.code, 5);
      assert.match(
        res.rawLog ?? "",
        /^failed to execute message; message index: 1: spendable balance \d+umfx is smaller than 1000000000000000000umfx: insufficient funds$/,
      );
    });

    it("refuses an amino signature made over another chain id, as the SDK words it", async () => {
      const { tx, accountNumber } = await signElsewhere(tenant);
      const r = await rpc(chain.devnet.rpc, "broadcast_tx_sync", {
        tx: Buffer.from(TxRaw.encode(tx).finish()).toString("base64"),
      });
      assert.equal(r.result.code, 4);
      assert.equal(
        r.result.log,
        `signature verification failed; please verify account number (${accountNumber}) and chain-id (fred-devnet-1): (unable to verify single signer signature): unauthorized`,
      );
    });
  });
}
