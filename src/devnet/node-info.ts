/**
 * What the node says about itself, in one place: the CometBFT `status` node_info and the
 * Cosmos `GetNodeInfo` query give the same facts (CometBFT 0.38, one local validator), and
 * the application version names the manifest-ledger line the devnet simulates.
 */
import type { DevnetNode } from "./node.ts";

export const COMETBFT_VERSION = "0.38.17";
const PROTOCOL = { p2p: 8, block: 11, app: 0 };
const LISTEN_ADDR = "tcp://127.0.0.1:26656";
const CHANNELS_HEX = "40202122233038606100";
const MONIKER = "fred-devnet";

/** `application_version` of GetNodeInfo: the newer manifest-ledger line (≥ v2.3.0) on SDK v0.50. */
export const APP_VERSION = {
  name: "manifest",
  appName: "manifestd",
  version: "v2.3.0",
  gitCommit: "",
  buildTags: "fred-devnet",
  goVersion: "",
  buildDeps: [],
  cosmosSdkVersion: "v0.50.14",
};

/** node_info as CometBFT's `status` writes it (integers as strings). */
export function nodeInfoJson(node: DevnetNode, rpcAddress: string) {
  return {
    protocol_version: {
      p2p: String(PROTOCOL.p2p),
      block: String(PROTOCOL.block),
      app: String(PROTOCOL.app),
    },
    id: node.validator.address.toLowerCase(),
    listen_addr: LISTEN_ADDR,
    network: node.chainId,
    version: COMETBFT_VERSION,
    channels: CHANNELS_HEX,
    moniker: MONIKER,
    other: { tx_index: "on", rpc_address: rpcAddress },
  };
}

/** The same node info as the protobuf DefaultNodeInfo of cosmos.base.tendermint.v1beta1. */
export function defaultNodeInfo(node: DevnetNode, rpcAddress: string) {
  return {
    protocolVersion: { p2p: BigInt(PROTOCOL.p2p), block: BigInt(PROTOCOL.block), app: BigInt(PROTOCOL.app) },
    defaultNodeId: node.validator.address.toLowerCase(),
    listenAddr: LISTEN_ADDR,
    network: node.chainId,
    version: COMETBFT_VERSION,
    channels: Buffer.from(CHANNELS_HEX, "hex"),
    moniker: MONIKER,
    other: { txIndex: "on", rpcAddress },
  };
}
