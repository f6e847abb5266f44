import { Bech32Address, makeADR36AminoSignDoc, serializeSignDoc } from "@keplr-wallet/cosmos";
import { Hash, Mnemonic, PrivKeySecp256k1 } from "@keplr-wallet/crypto";

/**
 * An access token minted the way a Keplr-based wallet does it, with none of our code:
 * Keplr derives the key from the mnemonic, builds the ADR-036 sign doc, serialises it
 * (sorted keys) and signs its SHA-256. Only the envelope (the reference's token JSON)
 * is assembled here.
 */
export function keplrAccessToken(mnemonic: string, leaseUuid: string, timestamp: number): string {
  const key = new PrivKeySecp256k1(Mnemonic.generateWalletFromMnemonic(mnemonic, "m/44'/118'/0'/0/0"));
  const pubKey = key.getPubKey();
  const tenant = new Bech32Address(pubKey.getCosmosAddress()).toBech32("manifest");
  const doc = makeADR36AminoSignDoc(tenant, `${tenant}:${leaseUuid}:${timestamp}`);
  const { r, s } = key.signDigest32(Hash.sha256(serializeSignDoc(doc)));
  const envelope = {
    tenant,
    lease_uuid: leaseUuid,
    timestamp,
    pub_key: Buffer.from(pubKey.toBytes()).toString("base64"),
    signature: Buffer.concat([r, s]).toString("base64"),
  };
  return Buffer.from(JSON.stringify(envelope)).toString("base64");
}

/** The payload-upload token, minted the same way (Keplr signs; only the envelope is ours). */
export function keplrPayloadToken(
  mnemonic: string,
  leaseUuid: string,
  metaHash: string,
  timestamp: number,
): string {
  const key = new PrivKeySecp256k1(Mnemonic.generateWalletFromMnemonic(mnemonic, "m/44'/118'/0'/0/0"));
  const pubKey = key.getPubKey();
  const tenant = new Bech32Address(pubKey.getCosmosAddress()).toBech32("manifest");
  const doc = makeADR36AminoSignDoc(tenant, `manifest lease data ${leaseUuid} ${metaHash} ${timestamp}`);
  const { r, s } = key.signDigest32(Hash.sha256(serializeSignDoc(doc)));
  const envelope = {
    tenant,
    lease_uuid: leaseUuid,
    meta_hash: metaHash,
    timestamp,
    pub_key: Buffer.from(pubKey.toBytes()).toString("base64"),
    signature: Buffer.concat([r, s]).toString("base64"),
  };
  return Buffer.from(JSON.stringify(envelope)).toString("base64");
}
