/**
 * POST /cosmos/tx/v1beta1/txs: the tx service's BroadcastTx as the SDK runs it behind the
 * gateway. The tx goes through the node's own mempool admission and CheckTx (what
 * `broadcast_tx_sync` does), and the answer is the TxResponse the SDK builds from CometBFT's
 * broadcast result: code, codespace, raw_log and txhash, the rest at their defaults.
 */
import {
  BroadcastMode,
  BroadcastTxRequest,
  BroadcastTxResponse,
} from "cosmjs-types/cosmos/tx/v1beta1/service";
import { hexUpper, sha256 } from "../blocks.ts";
import { type DevnetNode, RpcError } from "../node.ts";
import { RestError } from "./errors.ts";
import type { AnyCodec } from "./proto-json.ts";
import { buildRequest } from "./request-params.ts";

/**
 * CometBFT refusals the SDK's CheckCometError turns into a TxResponse with an SDK code rather
 * than an error: already in the cache (19), mempool full (20), tx too large (21).
 */
const COMET_REFUSALS: ReadonlyArray<readonly [RegExp, number]> = [
  [/tx already exists in cache/, 19],
  [/mempool is full/, 20],
  [/Tx too large/, 21],
];

export const broadcastCodec = BroadcastTxRequest as unknown as AnyCodec;

function txResponse(fields: { hash: string; code?: number; codespace?: string; log?: string }) {
  return BroadcastTxResponse.fromPartial({
    txResponse: {
      height: 0n,
      txhash: fields.hash,
      codespace: fields.codespace ?? "",
      code: fields.code ?? 0,
      data: "",
      rawLog: fields.log ?? "",
      logs: [],
      info: "",
      gasWanted: 0n,
      gasUsed: 0n,
      timestamp: "",
      events: [],
    },
  });
}

export async function broadcastTx(
  node: DevnetNode,
  body: ReadonlyArray<readonly [string, string[]]>,
): Promise<BroadcastTxResponse> {
  const req = buildRequest(broadcastCodec, body) as BroadcastTxRequest;
  if (req.txBytes.length === 0) throw new RestError("InvalidArgument", "invalid empty tx");
  const mode = req.mode;
  if (mode !== BroadcastMode.BROADCAST_MODE_SYNC && mode !== BroadcastMode.BROADCAST_MODE_ASYNC)
    throw new RestError("Unknown", "unsupported return type unspecified; supported types: sync, async");
  const hash = hexUpper(sha256(req.txBytes));
  try {
    const out = await node.broadcast(req.txBytes);
    if (mode === BroadcastMode.BROADCAST_MODE_ASYNC) return txResponse({ hash });
    return txResponse({ hash, code: out.code, codespace: out.codespace, log: out.log });
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    const text = err.data ?? err.message;
    const refusal = COMET_REFUSALS.find(([re]) => re.test(text));
    if (refusal === undefined) throw new RestError("Unknown", text);
    return txResponse({ hash, code: refusal[1], codespace: "sdk" });
  }
}
