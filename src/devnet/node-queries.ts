/**
 * The query services an SDK v0.50 app registers next to its modules that read the node
 * rather than module state: the tx service's GetTx and GetTxsEvent (over the tx index, as
 * the SDK does over CometBFT's tx_search), cosmos.base.node's Config and Status, and
 * cosmos.base.tendermint's GetNodeInfo. Registered into the app by the composition root.
 */

import type { TxResponse } from "cosmjs-types/cosmos/base/abci/v1beta1/abci";
import { ConfigResponse, StatusResponse } from "cosmjs-types/cosmos/base/node/v1beta1/query";
import { GetNodeInfoResponse } from "cosmjs-types/cosmos/base/tendermint/v1beta1/query";
import {
  GetTxRequest,
  GetTxResponse,
  GetTxsEventRequest,
  GetTxsEventResponse,
  OrderBy,
} from "cosmjs-types/cosmos/tx/v1beta1/service";
import { Tx } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import type { CommittedTx } from "./blocks.ts";
import type { GasPrice } from "./gas-price.ts";
import type { QueryHandler } from "./module.ts";
import type { DevnetNode } from "./node.ts";
import { APP_VERSION, defaultNodeInfo } from "./node-info.ts";
import { grpcError } from "./query-kit.ts";
import { parseQuery, QuerySyntaxError } from "./query-lang.ts";

const DEFAULT_LIMIT = 100;
const MAX_PER_PAGE = 100;
const TX_URL = "/cosmos.tx.v1beta1.Tx";

/** The SDK prints a DecCoin with 18 decimals: "0.000025000000000000umfx". */
export function decCoinString(price: GasPrice): string {
  const scale = 10n ** 18n;
  return `${price.scaled / scale}.${(price.scaled % scale).toString().padStart(18, "0")}${price.denom}`;
}

function hexToBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, "hex"));
}

export function nodeQueries(node: DevnetNode, rpcAddress: () => string): Record<string, QueryHandler> {
  /** Go's time.RFC3339 of the block's time: whole seconds, "Z". */
  const blockTime = (height: number) => {
    const time = node.blockSummary(height)?.header.time ?? "";
    return time.replace(/\.\d+Z$/, "Z");
  };

  const txResponse = (tx: CommittedTx): TxResponse => {
    const r = tx.result;
    return {
      height: BigInt(tx.height),
      txhash: tx.hash,
      codespace: r.codespace,
      code: r.code,
      data: r.data === null ? "" : Buffer.from(r.data, "base64").toString("hex").toUpperCase(),
      rawLog: r.log,
      logs: [],
      info: r.info,
      gasWanted: BigInt(r.gas_wanted),
      gasUsed: BigInt(r.gas_used),
      tx: { typeUrl: TX_URL, value: tx.tx },
      timestamp: blockTime(tx.height),
      events: r.events,
    };
  };

  const search = (query: string) => {
    try {
      return node.index.search(parseQuery(query));
    } catch (err) {
      if (err instanceof QuerySyntaxError)
        throw grpcError("Internal", `failed to parse query: ${err.message}`);
      throw err;
    }
  };

  return {
    "/cosmos.tx.v1beta1.Service/GetTxsEvent"(_ctx, request) {
      const req = GetTxsEventRequest.decode(request);
      if (req.query === "") throw grpcError("InvalidArgument", "query cannot be empty");
      const all = search(req.query);
      if (req.orderBy === OrderBy.ORDER_BY_DESC) all.reverse();
      // As the SDK calls tx_search: page 0 → 1, limit 0 → 100; CometBFT caps a page at 100.
      const page = req.page > 0n ? Number(req.page) : 1;
      const perPage = Math.min(req.limit > 0n ? Number(req.limit) : DEFAULT_LIMIT, MAX_PER_PAGE);
      const pages = Math.max(1, Math.ceil(all.length / perPage));
      if (page > pages)
        throw grpcError("Internal", `page should be within [1, ${pages}] range, given ${page}`);
      const txs = all.slice((page - 1) * perPage, page * perPage);
      return GetTxsEventResponse.encode({
        txs: txs.map((t) => Tx.decode(t.tx)),
        txResponses: txs.map(txResponse),
        total: BigInt(all.length),
      }).finish();
    },
    "/cosmos.tx.v1beta1.Service/GetTx"(_ctx, request) {
      const { hash } = GetTxRequest.decode(request);
      if (hash === "") throw grpcError("InvalidArgument", "tx hash cannot be empty");
      const tx = /^[0-9a-fA-F]{64}$/.test(hash) ? node.index.byHash(hash) : undefined;
      if (tx === undefined) throw grpcError("NotFound", `tx not found: ${hash}`);
      return GetTxResponse.encode({ tx: Tx.decode(tx.tx), txResponse: txResponse(tx) }).finish();
    },
    "/cosmos.base.node.v1beta1.Service/Config": () =>
      ConfigResponse.encode({
        minimumGasPrice: decCoinString(node.app.config.minGasPrice),
        pruningKeepRecent: "0",
        pruningInterval: "0",
        haltHeight: 0n,
      }).finish(),
    "/cosmos.base.node.v1beta1.Service/Status"() {
      const header = node.blockSummary(node.height)?.header;
      const ms = node.lastBlockTimeMs;
      return StatusResponse.encode({
        earliestStoreHeight: 0n,
        height: BigInt(node.height),
        timestamp: { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 },
        appHash: hexToBytes(header?.app_hash ?? ""),
        validatorHash: hexToBytes(header?.next_validators_hash ?? ""),
      }).finish();
    },
    "/cosmos.base.tendermint.v1beta1.Service/GetNodeInfo": () =>
      GetNodeInfoResponse.encode({
        defaultNodeInfo: defaultNodeInfo(node, rpcAddress()),
        applicationVersion: APP_VERSION,
      }).finish(),
  };
}
