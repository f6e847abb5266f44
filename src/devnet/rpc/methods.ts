/**
 * CometBFT 0.38 JSON-RPC methods over the devnet node, with the exact JSON types cosmjs
 * decodes (strings for int64, numbers for code/index/round, hex hashes, base64 payloads),
 * plus the devnet_* control methods (only for callers `./control-guard.ts` lets through).
 */
import { withDeadline } from "../../core/async/index.ts";
import { hexUpper, rfc3339, sha256 } from "../blocks.ts";
import { type CommittedTx, type DevnetNode, internalRpcError, RpcError } from "../node.ts";
import { nodeInfoJson } from "../node-info.ts";
import { parseQuery, QuerySyntaxError } from "../query-lang.ts";
import { CONTROL_REFUSED } from "./control-guard.ts";
import {
  base64Param,
  boolParam,
  hexParam,
  intParam,
  invalidParams,
  type Params,
  stringParam,
} from "./params.ts";

const BROADCAST_COMMIT_TIMEOUT_MS = 10_000;

export interface CallContext {
  node: DevnetNode;
  /** True when the request may run the devnet_* control methods (see ./control-guard.ts). */
  control: boolean;
  rpcAddress: string;
}

type Method = (ctx: CallContext, params: Params) => unknown | Promise<unknown>;

function heightParam(node: DevnetNode, params: Params, name = "height"): number {
  const h = intParam(params, name);
  if (h === undefined) return node.height;
  if (h <= 0) throw internalRpcError(`height must be greater than 0, but got ${h}`);
  if (h > node.height) {
    throw internalRpcError(
      `height ${h} must be less than or equal to the current blockchain height ${node.height}`,
    );
  }
  if (h < node.earliestHeight)
    throw internalRpcError(`height ${h} is not available, lowest height is ${node.earliestHeight}`);
  return h;
}

function stored(node: DevnetNode, height: number) {
  const b = node.blockAt(height);
  if (!b)
    throw internalRpcError(`height ${height} is not available, lowest height is ${node.earliestHeight}`);
  return b;
}

function resultTx(tx: CommittedTx) {
  return {
    hash: tx.hash,
    height: String(tx.height),
    index: tx.index,
    tx_result: tx.result,
    tx: Buffer.from(tx.tx).toString("base64"),
  };
}

function conditionsOf(query: string) {
  try {
    return parseQuery(query);
  } catch (err) {
    if (err instanceof QuerySyntaxError) throw internalRpcError(`failed to parse query: ${err.message}`);
    throw err;
  }
}

function paging(params: Params, total: number): { page: number; perPage: number } {
  const perPageRaw = intParam(params, "per_page") ?? 30;
  const perPage = perPageRaw < 1 ? 30 : Math.min(perPageRaw, 100);
  const pages = Math.max(1, Math.ceil(total / perPage));
  const page = intParam(params, "page") ?? 1;
  if (page < 1 || page > pages)
    throw internalRpcError(`page should be within [1, ${pages}] range, given ${page}`);
  return { page, perPage };
}

function broadcastResult(out: { code: number; log: string; codespace: string; hash: string }) {
  return { code: out.code, data: "", log: out.log, codespace: out.codespace, hash: out.hash };
}

function checkTxJson(out: {
  code: number;
  log: string;
  codespace: string;
  gasWanted: bigint;
  gasUsed: bigint;
}) {
  return {
    code: out.code,
    data: null,
    log: out.log,
    info: "",
    gas_wanted: out.gasWanted.toString(),
    gas_used: out.gasUsed.toString(),
    events: [],
    codespace: out.codespace,
  };
}

function control(ctx: CallContext): void {
  if (!ctx.control) throw new RpcError(-32601, "Method not found", CONTROL_REFUSED);
}

export const methods: Record<string, Method> = {
  health: () => ({}),

  status: ({ node, rpcAddress }) => {
    const latest = node.height > 0 ? node.blockSummary(node.height) : undefined;
    const earliest = node.height > 0 ? node.blockSummary(node.earliestHeight) : undefined;
    return {
      node_info: nodeInfoJson(node, rpcAddress),
      sync_info: {
        latest_block_hash: latest?.hash ?? "",
        latest_app_hash: node.appHash,
        latest_block_height: String(node.height),
        latest_block_time: rfc3339(node.lastBlockTimeMs),
        earliest_block_hash: earliest?.hash ?? "",
        earliest_app_hash: earliest?.header.app_hash ?? "",
        earliest_block_height: String(earliest ? node.earliestHeight : 0),
        earliest_block_time: earliest?.header.time ?? rfc3339(node.lastBlockTimeMs),
        catching_up: false,
      },
      validator_info: {
        address: node.validator.address,
        pub_key: { type: "tendermint/PubKeyEd25519", value: node.validator.pubKeyBase64 },
        voting_power: "10",
      },
    };
  },

  abci_info: ({ node }) => ({
    response: {
      data: "fred-devnet",
      version: "0.1.0",
      app_version: "0",
      last_block_height: String(node.height),
      last_block_app_hash: Buffer.from(node.appHash, "hex").toString("base64"),
    },
  }),

  abci_query: ({ node }, params) => {
    const path = stringParam(params, "path", true) as string;
    const data = hexParam(params, "data");
    intParam(params, "height");
    boolParam(params, "prove");
    const r = node.app.query(path, data, node.queryBlock());
    return {
      response: {
        code: r.code,
        log: r.log,
        info: "",
        index: "0",
        key: null,
        value: r.code === 0 ? Buffer.from(r.value).toString("base64") : null,
        proofOps: null,
        height: String(node.height),
        codespace: r.codespace,
      },
    };
  },

  broadcast_tx_sync: async ({ node }, params) =>
    broadcastResult(await node.broadcast(base64Param(params, "tx"))),

  broadcast_tx_async: async ({ node }, params) => {
    const out = await node.broadcast(base64Param(params, "tx"));
    return { code: 0, data: "", log: "", codespace: "", hash: out.hash };
  },

  broadcast_tx_commit: async ({ node }, params) => {
    const bytes = base64Param(params, "tx");
    const hash = hexUpper(sha256(bytes));
    // CometBFT's own words for a commit wait that ran out (an RPC error, not a FredError).
    const timedOut = () => internalRpcError("timed out waiting for tx to be included in a block");
    // Aborted when CheckTx refuses the tx: there is then nothing to wait for.
    const refused = new AbortController();
    try {
      const waiting = withDeadline(node.clock, BROADCAST_COMMIT_TIMEOUT_MS, refused.signal, timedOut, (s) =>
        node.waitForTx(hash, s),
      );
      waiting.catch(() => {});
      const check = await node.broadcast(bytes);
      if (check.code !== 0) {
        refused.abort(new Error("check failed"));
        return {
          check_tx: checkTxJson(check),
          tx_result: {
            code: 0,
            data: null,
            log: "",
            info: "",
            gas_wanted: "0",
            gas_used: "0",
            events: [],
            codespace: "",
          },
          hash,
          height: "0",
        };
      }
      const tx = await waiting.catch((err: unknown) => {
        if (err instanceof RpcError) throw err;
        throw internalRpcError("timed out waiting for tx to be included in a block");
      });
      return { check_tx: checkTxJson(check), tx_result: tx.result, hash, height: String(tx.height) };
    } finally {
      // The deadline's timer goes with the wait; a return before it settles ends the wait too.
      refused.abort(new Error("answered"));
    }
  },

  check_tx: ({ node }, params) => {
    // CheckTx on a throwaway copy of the check state: nothing is added to the mempool.
    const out = node.app.checkTxDry(base64Param(params, "tx"), node.queryBlock());
    return checkTxJson(out);
  },

  tx: ({ node }, params) => {
    const hash = base64Param(params, "hash");
    if (hash.length !== 32)
      throw invalidParams("error converting json params to arguments: hash must be 32 bytes");
    boolParam(params, "prove");
    const tx = node.index.byHash(hexUpper(hash));
    if (!tx) throw internalRpcError(`tx (${hexUpper(hash)}) not found`);
    return resultTx(tx);
  },

  tx_search: ({ node }, params) => {
    const query = stringParam(params, "query", true) as string;
    boolParam(params, "prove");
    const order = stringParam(params, "order_by", false) ?? "";
    if (order !== "" && order !== "asc" && order !== "desc") {
      throw internalRpcError("expected order_by to be either `asc` or `desc` or empty");
    }
    const all = node.index.search(conditionsOf(query));
    if (order === "desc") all.reverse();
    const { page, perPage } = paging(params, all.length);
    const slice = all.slice((page - 1) * perPage, page * perPage);
    return { txs: slice.map(resultTx), total_count: String(all.length) };
  },

  block_search: ({ node }, params) => {
    const query = stringParam(params, "query", true) as string;
    // CometBFT lists the newest blocks first unless asked otherwise (tx_search: oldest first).
    const order = stringParam(params, "order_by", false) ?? "";
    if (order !== "" && order !== "asc" && order !== "desc") {
      throw internalRpcError("expected order_by to be either `asc` or `desc` or empty");
    }
    const heights = node.blockIndex.search(conditionsOf(query), node.earliestHeight, node.height);
    if (order !== "asc") heights.reverse();
    const { page, perPage } = paging(params, heights.length);
    const blocks = heights.slice((page - 1) * perPage, page * perPage).map((h) => {
      const b = stored(node, h);
      return { block_id: b.block_id, block: b.block };
    });
    return { blocks, total_count: String(heights.length) };
  },

  block: ({ node }, params) => {
    const b = stored(node, heightParam(node, params));
    return { block_id: b.block_id, block: b.block };
  },

  header: ({ node }, params) => {
    const h = heightParam(node, params);
    const summary = node.blockSummary(h);
    return { header: summary === undefined ? stored(node, h).block.header : summary.header };
  },

  block_results: ({ node }, params) => stored(node, heightParam(node, params)).results,

  commit: ({ node }, params) => {
    const h = heightParam(node, params);
    const b = stored(node, h);
    const next = h < node.height ? node.blockAt(h + 1) : undefined;
    // The commit of the tip is only known once the next block carries it; we sign at commit.
    const commit = next
      ? next.block.last_commit
      : { height: String(h), round: 0, block_id: b.block_id, signatures: [] };
    return { signed_header: { header: b.block.header, commit }, canonical: next !== undefined };
  },

  blockchain: ({ node }, params) => {
    const max = Math.min(intParam(params, "maxHeight") || node.height, node.height);
    const min = Math.max(intParam(params, "minHeight") || 1, node.earliestHeight, max - 19);
    if (min > max) throw internalRpcError(`min height ${min} can't be greater than max height ${max}`);
    const metas = [];
    for (let h = max; h >= min; h--) {
      const b = node.blockAt(h);
      if (!b) continue;
      metas.push({
        block_id: b.block_id,
        block_size: String(b.size),
        header: b.block.header,
        num_txs: String(b.num_txs),
      });
    }
    return { last_height: String(node.height), block_metas: metas };
  },

  validators: ({ node }, params) => {
    const h = heightParam(node, params);
    paging(params, 1);
    return {
      block_height: String(h),
      validators: [
        {
          address: node.validator.address,
          pub_key: { type: "tendermint/PubKeyEd25519", value: node.validator.pubKeyBase64 },
          voting_power: "10",
          proposer_priority: "0",
        },
      ],
      count: "1",
      total: "1",
    };
  },

  genesis: ({ node }) => ({ genesis: node.genesis }),

  consensus_params: ({ node }, params) => ({
    block_height: String(heightParam(node, params)),
    consensus_params: (node.genesis as { consensus_params: unknown }).consensus_params,
  }),

  num_unconfirmed_txs: ({ node }) => ({
    n_txs: String(node.mempoolSize),
    total: String(node.mempoolSize),
    total_bytes: String(node.mempoolBytes),
    txs: null,
  }),

  devnet_pause: (ctx) => {
    control(ctx);
    ctx.node.pause();
    return { paused: true, height: String(ctx.node.height) };
  },

  devnet_resume: (ctx) => {
    control(ctx);
    ctx.node.resume();
    return { paused: false, height: String(ctx.node.height) };
  },

  devnet_produce_block: (ctx) => {
    control(ctx);
    return { height: String(ctx.node.produceBlock()) };
  },

  devnet_advance_time: (ctx, params) => {
    control(ctx);
    const s = params.seconds;
    const seconds = typeof s === "string" && /^[0-9]+(\.[0-9]+)?$/.test(s) ? Number(s) : s;
    if (
      typeof seconds !== "number" ||
      !Number.isFinite(seconds) ||
      seconds < 0 ||
      seconds > 10 * 365 * 86400
    ) {
      throw invalidParams("seconds must be a non-negative number of seconds (at most ten years)");
    }
    ctx.node.advanceTime(seconds);
    return { next_block_time_min: rfc3339(ctx.node.lastBlockTimeMs + seconds * 1000) };
  },
};

export async function callMethod(ctx: CallContext, method: string, params: Params): Promise<unknown> {
  const fn = Object.hasOwn(methods, method) ? methods[method] : undefined;
  if (!fn) throw new RpcError(-32601, "Method not found");
  return fn(ctx, params);
}
