/**
 * The block half of cosmos.base.tendermint.v1beta1.Service: GetLatestBlock, GetBlockByHeight
 * and GetSyncing. The SDK answers these from CometBFT's block store; here the stored
 * CometBFT JSON of a block (the same one the RPC `block` method returns) is turned back into
 * the protobuf Block, once as tendermint.types.Block and once as the SDK's Block (whose
 * header names the proposer by its bech32 consensus address).
 */
import {
  GetBlockByHeightRequest,
  GetBlockByHeightResponse,
  GetLatestBlockResponse,
  GetSyncingResponse,
} from "cosmjs-types/cosmos/base/tendermint/v1beta1/query";
import type { Timestamp } from "cosmjs-types/google/protobuf/timestamp";
import type { Block } from "cosmjs-types/tendermint/types/block";
import type { BlockID, Commit, Header } from "cosmjs-types/tendermint/types/types";
import { encodeAddress } from "./address.ts";
import type { BlockIdJson, BlockJson, CommitJson, HeaderJson } from "./blocks.ts";
import type { QueryHandler } from "./module.ts";
import type { DevnetNode } from "./node.ts";
import { grpcError } from "./query-kit.ts";

const hex = (h: string) => Uint8Array.from(Buffer.from(h, "hex"));

/** RFC 3339 with up to nine fraction digits → Timestamp. */
function timestamp(text: string): Timestamp {
  const m = /^(.*?)(?:\.(\d{1,9}))?Z$/.exec(text);
  const seconds = BigInt(Math.floor(Date.parse(`${m?.[1] ?? text}Z`) / 1000));
  return { seconds, nanos: Number((m?.[2] ?? "").padEnd(9, "0")) };
}

function blockId(id: BlockIdJson): BlockID {
  return { hash: hex(id.hash), partSetHeader: { total: id.parts.total, hash: hex(id.parts.hash) } };
}

function header(h: HeaderJson): Header {
  return {
    version: { block: BigInt(h.version.block), app: BigInt(h.version.app) },
    chainId: h.chain_id,
    height: BigInt(h.height),
    time: timestamp(h.time),
    lastBlockId: blockId(h.last_block_id),
    lastCommitHash: hex(h.last_commit_hash),
    dataHash: hex(h.data_hash),
    validatorsHash: hex(h.validators_hash),
    nextValidatorsHash: hex(h.next_validators_hash),
    consensusHash: hex(h.consensus_hash),
    appHash: hex(h.app_hash),
    lastResultsHash: hex(h.last_results_hash),
    evidenceHash: hex(h.evidence_hash),
    proposerAddress: hex(h.proposer_address),
  };
}

function commit(c: CommitJson): Commit {
  return {
    height: BigInt(c.height),
    round: c.round,
    blockId: blockId(c.block_id),
    signatures: c.signatures.map((s) => ({
      blockIdFlag: s.block_id_flag,
      validatorAddress: hex(s.validator_address),
      timestamp: timestamp(s.timestamp),
      signature:
        s.signature === null ? new Uint8Array() : Uint8Array.from(Buffer.from(s.signature, "base64")),
    })),
  };
}

function protoBlock(b: BlockJson): Block {
  return {
    header: header(b.header),
    data: { txs: (b.data.txs ?? []).map((t) => Uint8Array.from(Buffer.from(t, "base64"))) },
    evidence: { evidence: [] },
    lastCommit: commit(b.last_commit),
  };
}

export function blockQueries(node: DevnetNode, bech32Prefix: string): Record<string, QueryHandler> {
  const answer = (height: number) => {
    const stored = node.blockAt(height);
    if (!stored)
      throw grpcError(
        "InvalidArgument",
        `height ${height} is not available, lowest height is ${node.earliestHeight}`,
      );
    const block = protoBlock(stored.block);
    const proposer = encodeAddress(block.header.proposerAddress, `${bech32Prefix}valcons`);
    return {
      blockId: blockId(stored.block_id),
      block,
      sdkBlock: { ...block, header: { ...block.header, proposerAddress: proposer } },
    };
  };
  return {
    "/cosmos.base.tendermint.v1beta1.Service/GetSyncing": () =>
      GetSyncingResponse.encode({ syncing: false }).finish(),
    "/cosmos.base.tendermint.v1beta1.Service/GetLatestBlock": () =>
      GetLatestBlockResponse.encode(answer(node.height)).finish(),
    "/cosmos.base.tendermint.v1beta1.Service/GetBlockByHeight"(_ctx, request) {
      const { height } = GetBlockByHeightRequest.decode(request);
      if (height > BigInt(node.height))
        throw grpcError("InvalidArgument", "requested block height is bigger then the chain length");
      if (height <= 0n)
        throw grpcError("InvalidArgument", `height must be greater than 0, but got ${height}`);
      return GetBlockByHeightResponse.encode(answer(Number(height))).finish();
    },
  };
}
