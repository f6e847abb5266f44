/**
 * Amino JSON test vectors for the messages the devnet accepts under
 * SIGN_MODE_LEGACY_AMINO_JSON. The expected JSON is what the chain's published converters
 * (manifestjs' telescope-generated `liftedinit/*\/v1/tx.amino.ts` and `toAmino`) write for a
 * decoded message: empty strings and zero integers left out, uint64 as strings, enums as
 * numbers, bytes always (so an empty `meta_hash` or `key` is ""), repeated fields always,
 * non-nullable sub-messages always. The sign bytes are checked against both cosmjs lines
 * tenant tooling uses (0.39 and 0.32): the serialisation a wallet signs.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type AminoMsg,
  makeSignDoc,
  Secp256k1HdWallet,
  type StdFee,
  type StdSignDoc,
  serializeSignDoc,
} from "@cosmjs/amino";
import { fromBase64 } from "@cosmjs/encoding";
import {
  makeSignDoc as makeSignDoc032,
  Secp256k1HdWallet as Secp256k1HdWallet032,
  serializeSignDoc as serializeSignDoc032,
} from "cosmjs-amino-032";
import {
  AminoTypes as AminoTypes032,
  createDefaultAminoConverters as defaults032,
} from "cosmjs-stargate-032";
import { GenericAuthorization } from "cosmjs-types/cosmos/authz/v1beta1/authz";
import { AuthInfo, TxBody } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import { aminoSignBytes, chainAminoTypes, chainRegistry } from "../../src/chain/amino-signing.ts";
import {
  BillingMsgUpdateParams,
  billingAminoConverters,
  MsgAcknowledgeLease,
  MsgCancelLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseForTenant,
  MsgCreateProvider,
  MsgCreateSKU,
  MsgDeactivateProvider,
  MsgDeactivateSKU,
  MsgFundCredit,
  MsgRejectLease,
  MsgSetItemCustomDomain,
  MsgUpdateProvider,
  MsgUpdateSKU,
  MsgWithdraw,
  SkuMsgUpdateParams,
  Unit,
} from "../../src/chain/proto/index.ts";
import { aminoSignDoc } from "../../src/devnet/tx/amino.ts";
import { verifySecp256k1 } from "../../src/devnet/tx/verify.ts";

const T = "manifest1tenant0000000000000000000000000000";
const P = "manifest1provider00000000000000000000000000";
const SKU = "01900000-0000-7000-8000-00000000000a";
const LEASE = "01900000-0000-7000-8000-00000000000b";
const PROV = "01900000-0000-7000-8000-00000000000c";

const registry = chainRegistry();
const amino = chainAminoTypes(registry);
const json = (typeUrl: string, value: unknown) => JSON.stringify(amino.toAmino({ typeUrl, value }));

/** [name, type URL, decoded message, the amino JSON manifestjs' converters write for it]. */
const vectors: [string, string, unknown, string][] = [
  [
    "MsgCreateLease, empty meta_hash",
    MsgCreateLease.typeUrl,
    MsgCreateLease.fromPartial({ tenant: T, items: [{ skuUuid: SKU, quantity: 2n, serviceName: "" }] }),
    `{"type":"lifted/billing/MsgCreateLease","value":{"tenant":"${T}","items":[{"sku_uuid":"${SKU}","quantity":"2"}],"meta_hash":""}}`,
  ],
  [
    "MsgCreateLease, meta_hash and service names",
    MsgCreateLease.typeUrl,
    MsgCreateLease.fromPartial({
      tenant: T,
      items: [{ skuUuid: SKU, quantity: 1n, serviceName: "web" }],
      metaHash: new Uint8Array([1, 2, 3]),
    }),
    `{"type":"lifted/billing/MsgCreateLease","value":{"tenant":"${T}","items":[{"sku_uuid":"${SKU}","quantity":"1","service_name":"web"}],"meta_hash":"AQID"}}`,
  ],
  [
    "MsgWithdraw provider-wide, limit 0 and an empty key",
    MsgWithdraw.typeUrl,
    MsgWithdraw.fromPartial({ sender: P, providerUuid: PROV }),
    `{"type":"lifted/billing/MsgWithdraw","value":{"sender":"${P}","lease_uuids":[],"provider_uuid":"${PROV}","key":""}}`,
  ],
  [
    "MsgWithdraw with a limit and a cursor",
    MsgWithdraw.typeUrl,
    MsgWithdraw.fromPartial({
      sender: P,
      providerUuid: PROV,
      limit: 50n,
      key: new TextEncoder().encode(LEASE),
    }),
    `{"type":"lifted/billing/MsgWithdraw","value":{"sender":"${P}","lease_uuids":[],"provider_uuid":"${PROV}","limit":"50","key":"${Buffer.from(LEASE).toString("base64")}"}}`,
  ],
  [
    "MsgCloseLease, empty reason",
    MsgCloseLease.typeUrl,
    MsgCloseLease.fromPartial({ sender: T, leaseUuids: [LEASE] }),
    `{"type":"lifted/billing/MsgCloseLease","value":{"sender":"${T}","lease_uuids":["${LEASE}"]}}`,
  ],
  [
    "MsgRejectLease with a reason",
    MsgRejectLease.typeUrl,
    MsgRejectLease.fromPartial({ sender: P, leaseUuids: [LEASE], reason: "no capacity" }),
    `{"type":"lifted/billing/MsgRejectLease","value":{"sender":"${P}","lease_uuids":["${LEASE}"],"reason":"no capacity"}}`,
  ],
  [
    "MsgFundCredit (amount is non-nullable)",
    MsgFundCredit.typeUrl,
    MsgFundCredit.fromPartial({ sender: T, tenant: T, amount: { denom: "upwr", amount: "5" } }),
    `{"type":"lifted/billing/MsgFundCredit","value":{"sender":"${T}","tenant":"${T}","amount":{"denom":"upwr","amount":"5"}}}`,
  ],
  [
    "MsgFundCredit without an amount still writes one",
    MsgFundCredit.typeUrl,
    MsgFundCredit.fromPartial({ sender: T, tenant: T }),
    `{"type":"lifted/billing/MsgFundCredit","value":{"sender":"${T}","tenant":"${T}","amount":{"amount":""}}}`,
  ],
  [
    "billing MsgUpdateParams: zero counts left out, lists always",
    BillingMsgUpdateParams.typeUrl,
    BillingMsgUpdateParams.fromPartial({
      authority: P,
      params: { maxLeasesPerTenant: 100n, pendingTimeout: 1800n, minLeaseDuration: 0n },
    }),
    `{"type":"lifted/billing/MsgUpdateParams","value":{"authority":"${P}","params":{"max_leases_per_tenant":"100","allowed_list":[],"pending_timeout":"1800","reserved_domain_suffixes":[]}}}`,
  ],
  [
    "MsgCreateSKU: the unit as a number, base_price, empty meta_hash",
    MsgCreateSKU.typeUrl,
    MsgCreateSKU.fromPartial({
      authority: P,
      providerUuid: PROV,
      name: "docker-small",
      unit: Unit.UNIT_PER_HOUR,
      basePrice: { denom: "upwr", amount: "3600" },
    }),
    `{"type":"lifted/sku/MsgCreateSKU","value":{"authority":"${P}","provider_uuid":"${PROV}","name":"docker-small","unit":1,"base_price":{"denom":"upwr","amount":"3600"},"meta_hash":""}}`,
  ],
  [
    "MsgUpdateSKU: active=false left out",
    MsgUpdateSKU.typeUrl,
    MsgUpdateSKU.fromPartial({
      authority: P,
      uuid: SKU,
      providerUuid: PROV,
      name: "n",
      unit: Unit.UNIT_PER_DAY,
      basePrice: { denom: "upwr", amount: "1" },
      active: false,
    }),
    `{"type":"lifted/sku/MsgUpdateSKU","value":{"authority":"${P}","uuid":"${SKU}","provider_uuid":"${PROV}","name":"n","unit":2,"base_price":{"denom":"upwr","amount":"1"},"meta_hash":""}}`,
  ],
  [
    "MsgDeactivateProvider, limit 0",
    MsgDeactivateProvider.typeUrl,
    MsgDeactivateProvider.fromPartial({ authority: P, uuid: PROV }),
    `{"type":"lifted/sku/MsgDeactivateProvider","value":{"authority":"${P}","uuid":"${PROV}"}}`,
  ],
  [
    "MsgAcknowledgeLease",
    MsgAcknowledgeLease.typeUrl,
    MsgAcknowledgeLease.fromPartial({ sender: P, leaseUuids: [LEASE, SKU] }),
    `{"type":"lifted/billing/MsgAcknowledgeLease","value":{"sender":"${P}","lease_uuids":["${LEASE}","${SKU}"]}}`,
  ],
  [
    "MsgRejectLease, empty reason",
    MsgRejectLease.typeUrl,
    MsgRejectLease.fromPartial({ sender: P, leaseUuids: [LEASE] }),
    `{"type":"lifted/billing/MsgRejectLease","value":{"sender":"${P}","lease_uuids":["${LEASE}"]}}`,
  ],
  [
    "MsgCancelLease",
    MsgCancelLease.typeUrl,
    MsgCancelLease.fromPartial({ tenant: T, leaseUuids: [LEASE] }),
    `{"type":"lifted/billing/MsgCancelLease","value":{"tenant":"${T}","lease_uuids":["${LEASE}"]}}`,
  ],
  [
    "MsgCreateLeaseForTenant, empty meta_hash",
    MsgCreateLeaseForTenant.typeUrl,
    MsgCreateLeaseForTenant.fromPartial({
      authority: P,
      tenant: T,
      items: [{ skuUuid: SKU, quantity: 3n, serviceName: "" }],
    }),
    `{"type":"lifted/billing/MsgCreateLeaseForTenant","value":{"authority":"${P}","tenant":"${T}","items":[{"sku_uuid":"${SKU}","quantity":"3"}],"meta_hash":""}}`,
  ],
  [
    "MsgSetItemCustomDomain clearing the domain (empty custom_domain left out)",
    MsgSetItemCustomDomain.typeUrl,
    MsgSetItemCustomDomain.fromPartial({ sender: T, leaseUuid: LEASE, serviceName: "web" }),
    `{"type":"lifted/billing/MsgSetItemCustomDomain","value":{"sender":"${T}","lease_uuid":"${LEASE}","service_name":"web"}}`,
  ],
  [
    "MsgCreateProvider, empty meta_hash and no api_url",
    MsgCreateProvider.typeUrl,
    MsgCreateProvider.fromPartial({ authority: P, address: T, payoutAddress: T }),
    `{"type":"lifted/sku/MsgCreateProvider","value":{"authority":"${P}","address":"${T}","payout_address":"${T}","meta_hash":""}}`,
  ],
  [
    "MsgUpdateProvider, active=true written",
    MsgUpdateProvider.typeUrl,
    MsgUpdateProvider.fromPartial({
      authority: P,
      uuid: PROV,
      address: T,
      payoutAddress: T,
      active: true,
      apiUrl: "https://p.example",
    }),
    `{"type":"lifted/sku/MsgUpdateProvider","value":{"authority":"${P}","uuid":"${PROV}","address":"${T}","payout_address":"${T}","meta_hash":"","active":true,"api_url":"https://p.example"}}`,
  ],
  [
    "MsgDeactivateSKU",
    MsgDeactivateSKU.typeUrl,
    MsgDeactivateSKU.fromPartial({ authority: P, uuid: SKU }),
    `{"type":"lifted/sku/MsgDeactivateSKU","value":{"authority":"${P}","uuid":"${SKU}"}}`,
  ],
  [
    "sku MsgUpdateParams: an empty allowed_list is []",
    SkuMsgUpdateParams.typeUrl,
    SkuMsgUpdateParams.fromPartial({ authority: P, params: {} }),
    `{"type":"lifted/sku/MsgUpdateParams","value":{"authority":"${P}","params":{"allowed_list":[]}}}`,
  ],
];

describe("amino JSON of the Manifest messages (manifestjs converter rules)", () => {
  for (const [name, typeUrl, value, expected] of vectors) {
    it(name, () => {
      assert.equal(json(typeUrl, value), expected);
      // The converter round-trips (an unset non-nullable field comes back empty, not unset):
      // the tx body cosmjs builds from the signed JSON is the one signed.
      const back = amino.fromAmino(JSON.parse(expected));
      assert.equal(json(back.typeUrl, back.value), expected);
      if (!name.includes("without")) assert.deepEqual(back.value, value);
    });
  }

  it("cosmjs 0.32's AminoTypes with our converters writes the same JSON", () => {
    const old = new AminoTypes032({ ...defaults032(), ...billingAminoConverters });
    for (const [, typeUrl, value, expected] of vectors)
      assert.equal(JSON.stringify(old.toAmino({ typeUrl, value })), expected);
  });
});

/** x/authz and x/bank: the SDK's amino names (cosmos-sdk/…), inner messages in their own amino form. */
const grant = {
  granter: P,
  grantee: T,
  grant: {
    authorization: {
      typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
      value: GenericAuthorization.encode({ msg: "/cosmos.bank.v1beta1.MsgSend" }).finish(),
    },
    expiration: { seconds: 1_900_000_000n, nanos: 0 },
  },
};
const sdkVectors: [string, string, unknown, string][] = [
  [
    "MsgExec carries its inner messages in amino form",
    "/cosmos.authz.v1beta1.MsgExec",
    {
      grantee: T,
      msgs: [
        registry.encodeAsAny({
          typeUrl: "/liftedinit.billing.v1.MsgAcknowledgeLease",
          value: { sender: P, leaseUuids: [LEASE] },
        }),
      ],
    },
    `{"type":"cosmos-sdk/MsgExec","value":{"grantee":"${T}","msgs":[{"type":"lifted/billing/MsgAcknowledgeLease","value":{"sender":"${P}","lease_uuids":["${LEASE}"]}}]}}`,
  ],
  [
    "MsgGrant with a GenericAuthorization and an expiration",
    "/cosmos.authz.v1beta1.MsgGrant",
    grant,
    `{"type":"cosmos-sdk/MsgGrant","value":{"granter":"${P}","grantee":"${T}","grant":{"authorization":{"type":"cosmos-sdk/GenericAuthorization","value":{"msg":"/cosmos.bank.v1beta1.MsgSend"}},"expiration":"2030-03-17T17:46:40Z"}}}`,
  ],
  [
    "MsgRevoke",
    "/cosmos.authz.v1beta1.MsgRevoke",
    { granter: P, grantee: T, msgTypeUrl: "/cosmos.bank.v1beta1.MsgSend" },
    `{"type":"cosmos-sdk/MsgRevoke","value":{"granter":"${P}","grantee":"${T}","msg_type_url":"/cosmos.bank.v1beta1.MsgSend"}}`,
  ],
  [
    "MsgSend as cosmjs' bank converter writes it",
    "/cosmos.bank.v1beta1.MsgSend",
    { fromAddress: T, toAddress: P, amount: [{ denom: "umfx", amount: "1" }] },
    `{"type":"cosmos-sdk/MsgSend","value":{"from_address":"${T}","to_address":"${P}","amount":[{"denom":"umfx","amount":"1"}]}}`,
  ],
];

describe("amino JSON of x/authz and x/bank messages", () => {
  for (const [name, typeUrl, value, expected] of sdkVectors) {
    it(name, () => {
      assert.equal(json(typeUrl, value), expected);
      assert.deepEqual(amino.fromAmino(JSON.parse(expected)).value, value);
    });
  }
});

describe("the sign bytes", () => {
  const messages = [
    { typeUrl: MsgCloseLease.typeUrl, value: MsgCloseLease.fromPartial({ sender: T, leaseUuids: [LEASE] }) },
  ];
  const fee = { amount: [{ denom: "umfx", amount: "5000" }], gas: "200000" };
  const expected =
    `{"account_number":"7","chain_id":"fred-devnet-1","fee":{"amount":[{"amount":"5000","denom":"umfx"}],"gas":"200000"},` +
    `"memo":"a \\u003cb\\u003e \\u0026 c","msgs":[{"type":"lifted/billing/MsgCloseLease","value":{"lease_uuids":["${LEASE}"],"sender":"${T}"}}],"sequence":"3"}`;

  it("are the sorted, escaped StdSignDoc, as both cosmjs lines serialise it", () => {
    const ours = aminoSignBytes({
      aminoTypes: amino,
      messages,
      fee,
      chainId: "fred-devnet-1",
      memo: "a <b> & c",
      accountNumber: 7n,
      sequence: 3n,
    });
    assert.equal(new TextDecoder().decode(ours), expected);
    const msgs = messages.map((m) => amino.toAmino(m));
    assert.deepEqual(ours, serializeSignDoc(makeSignDoc(msgs, fee, "fred-devnet-1", "a <b> & c", 7, 3)));
    assert.deepEqual(
      Buffer.from(ours),
      Buffer.from(serializeSignDoc032(makeSignDoc032(msgs, fee, "fred-devnet-1", "a <b> & c", 7, 3))),
    );
  });

  it("carry timeout_height only when it is set", () => {
    const bytes = (timeoutHeight: bigint) =>
      new TextDecoder().decode(
        aminoSignBytes({
          aminoTypes: amino,
          messages,
          fee,
          chainId: "c",
          memo: "",
          accountNumber: 0n,
          sequence: 0n,
          timeoutHeight,
        }),
      );
    assert.ok(!bytes(0n).includes("timeout_height"));
    assert.ok(bytes(99n).includes(`"timeout_height":"99"`));
  });
});

describe("what a wallet signs for each vector is what the node verifies", () => {
  // A fixed, public test mnemonic: the signatures are deterministic (RFC 6979).
  const MNEMONIC = `${"abandon ".repeat(11)}about`;
  const CHAIN = "fred-devnet-1";
  const fee = { amount: [{ denom: "umfx", amount: "5000" }], gas: "200000" };
  const memo = "vector";
  const nodeSignBytes = aminoSignDoc(CHAIN);

  /** The sign bytes the node rebuilds from the tx as it arrives on the wire (protobuf, decoded). */
  function nodeBytes(typeUrl: string, value: unknown): Uint8Array {
    const body = TxBody.encode(
      TxBody.fromPartial({ messages: [registry.encodeAsAny({ typeUrl, value })], memo }),
    ).finish();
    const authInfo = AuthInfo.encode(
      AuthInfo.fromPartial({ fee: { amount: fee.amount, gasLimit: BigInt(fee.gas) } }),
    ).finish();
    return nodeSignBytes({ body: TxBody.decode(body), authInfo: AuthInfo.decode(authInfo) }, 12n, 4n);
  }

  /** The part of either line's amino wallet this test uses. */
  interface AminoWallet {
    getAccounts(): Promise<readonly { address: string; pubkey: Uint8Array }[]>;
    signAmino(
      address: string,
      doc: StdSignDoc,
    ): Promise<{ signed: StdSignDoc; signature: { signature: string } }>;
  }
  const lines: {
    line: string;
    wallet: (mnemonic: string) => Promise<AminoWallet>;
    makeDoc: (
      msgs: AminoMsg[],
      fee: StdFee,
      chainId: string,
      memo: string,
      account: number,
      sequence: number,
    ) => StdSignDoc;
    serialize: (doc: StdSignDoc) => Uint8Array;
  }[] = [
    {
      line: "0.39",
      wallet: (m) => Secp256k1HdWallet.fromMnemonic(m, { prefix: "manifest" }),
      makeDoc: makeSignDoc,
      serialize: serializeSignDoc,
    },
    {
      line: "0.32",
      wallet: (m) => Secp256k1HdWallet032.fromMnemonic(m, { prefix: "manifest" }),
      makeDoc: makeSignDoc032,
      serialize: serializeSignDoc032,
    },
  ];

  for (const { line, wallet, makeDoc, serialize } of lines) {
    it(`cosmjs ${line}: Secp256k1HdWallet.signAmino over the vector JSON verifies against the node's bytes`, async () => {
      const signer = await wallet(MNEMONIC);
      const [account] = await signer.getAccounts();
      assert.ok(account);
      for (const [name, typeUrl, value, expected] of [...vectors, ...sdkVectors]) {
        // The wallet is handed the JSON the chain's converters write, never our own output.
        const doc = makeDoc([JSON.parse(expected)], fee, CHAIN, memo, 12, 4);
        const node = nodeBytes(typeUrl, value);
        assert.equal(new TextDecoder().decode(node), new TextDecoder().decode(serialize(doc)), name);
        const { signed, signature } = await signer.signAmino(account.address, doc);
        assert.deepEqual(signed, doc, `${name}: the wallet signed the doc unchanged`);
        assert.equal(
          verifySecp256k1(account.pubkey, node, fromBase64(signature.signature)),
          undefined,
          `${name}: the node accepts the wallet's signature`,
        );
      }
    });
  }
});
