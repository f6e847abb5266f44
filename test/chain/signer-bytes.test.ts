import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encodeSecp256k1Pubkey } from "@cosmjs/amino";
import { encodePubkey, makeAuthInfoBytes, makeSignBytes, makeSignDoc } from "@cosmjs/proto-signing";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { SignMode } from "cosmjs-types/cosmos/tx/signing/v1beta1/signing";
import { TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import { chainRegistry } from "../../src/chain/amino-signing.ts";
import { buildSignedTx, buildSimulationTx, signerFromKey } from "../../src/chain/cosmos/signer.ts";
import { txMessages } from "../../src/chain/cosmos/tx-messages.ts";
import { MsgAcknowledgeLease } from "../../src/chain/proto/index.ts";

/**
 * providerd builds its transactions from cosmjs-types' codecs without @cosmjs/proto-signing
 * (kept out of an idle providerd for its memory). The bytes must be the ones proto-signing
 * builds, or the chain refuses every signature: this pins them against the library.
 */
const signer = signerFromKey(new Uint8Array(32).fill(7));
const messages = [
  { typeUrl: MsgAcknowledgeLease.typeUrl, value: { sender: signer.address, leaseUuids: ["a", "b"] } },
  {
    typeUrl: "/cosmos.bank.v1beta1.MsgSend",
    value: {
      fromAddress: signer.address,
      toAddress: signer.address,
      amount: [{ denom: "umfx", amount: "5" }],
    },
  },
];
const registry = chainRegistry();
const bodyBytes = registry.encode({ typeUrl: "/cosmos.tx.v1beta1.TxBody", value: { messages, memo: "m" } });
const pubkey = encodePubkey(encodeSecp256k1Pubkey(signer.pubkey));

describe("transaction bytes without @cosmjs/proto-signing", () => {
  it("a direct-signed tx is byte for byte the one proto-signing builds", () => {
    const fee = { denom: "umfx", amount: "1250" };
    const authInfoBytes = makeAuthInfoBytes(
      [{ pubkey, sequence: 12 }],
      [fee],
      250_000,
      undefined,
      undefined,
      SignMode.SIGN_MODE_DIRECT,
    );
    const signDoc = makeSignDoc(bodyBytes, authInfoBytes, "fred-devnet-1", 3);
    const signatures = [secp256k1.sign(makeSignBytes(signDoc), signer.privateKey)];
    const expected = TxRaw.encode(TxRaw.fromPartial({ bodyBytes, authInfoBytes, signatures })).finish();
    const ours = buildSignedTx({
      registry: txMessages,
      signer,
      chainId: "fred-devnet-1",
      accountNumber: 3n,
      sequence: 12,
      messages,
      memo: "m",
      gas: 250_000,
      fee,
    });
    assert.deepEqual(Buffer.from(ours), Buffer.from(expected));
  });

  it("the simulation tx is the one cosmjs sends to Simulate", () => {
    const authInfoBytes = makeAuthInfoBytes(
      [{ pubkey, sequence: 12 }],
      [],
      0,
      undefined,
      undefined,
      SignMode.SIGN_MODE_UNSPECIFIED,
    );
    const expected = TxRaw.encode(
      TxRaw.fromPartial({ bodyBytes, authInfoBytes, signatures: [new Uint8Array()] }),
    ).finish();
    const ours = buildSimulationTx(txMessages, signer, 12, messages, "m");
    assert.deepEqual(Buffer.from(ours), Buffer.from(expected));
  });

  it("a message outside the table is refused by name, not encoded half", () => {
    assert.throws(
      () => txMessages.encodeAsAny({ typeUrl: "/cosmos.gov.v1.MsgVote", value: {} }),
      /no codec for \/cosmos\.gov\.v1\.MsgVote/,
    );
  });
});
