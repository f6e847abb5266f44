// Over 500 lines: block production, mempool and history reads share one SQLite transaction per block.
/**
 * The node: mempool, block production, commit to SQLite, the event bus and the history
 * reads behind the RPC. One block executes synchronously inside one SQLite transaction, so
 * CheckTx, queries and RPC reads always see a committed state.
 */
import type Database from "better-sqlite3";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../log.ts";
import type { DevnetApp, TxOutcome } from "./app.ts";
import { BlockIndex } from "./block-index.ts";
import {
  type BlockIdJson,
  type BlockJson,
  type BlockResultsJson,
  blockIdFor,
  CONSENSUS_PARAMS,
  type CommitJson,
  type CommittedTx,
  commitFor,
  EMPTY_BLOCK_ID,
  type ExecTxResultJson,
  eventsJson,
  type HeaderJson,
  hexUpper,
  rfc3339,
  sha256,
  txResultJson,
  type Validator,
} from "./blocks.ts";
import { type BusEvent, blockBusEvents, txBusEvent } from "./bus-events.ts";
import type { BlockInfo } from "./module.ts";
import { MetaTable } from "./store/db.ts";
import { preverifySecp256k1 } from "./tx/verify.ts";
import { TxIndex } from "./tx-index.ts";

export const MAX_TX_BYTES = 1_048_576;
const MAX_MEMPOOL_TXS = 20_000;
const CACHE_SIZE = 100_000;

export type { CommittedTx } from "./blocks.ts";
export type { BusEvent, BusEventKind } from "./bus-events.ts";

/** A JSON-RPC level refusal (CometBFT answers these as errors, not as CheckTx codes). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: string,
  ) {
    super(message);
  }
}

export const internalRpcError = (data: string) => new RpcError(-32603, "Internal error", data);

export interface NodeOptions {
  db: Database.Database;
  app: DevnetApp;
  validator: Validator;
  clock: Clock;
  /** 0 = produce a block as soon as the mempool has a tx (and on demand). */
  blockTimeMs: number;
  /** Keep only the last N blocks of history; 0 keeps everything. */
  historyBlocks: number;
  logger: Logger;
}

interface PendingTx {
  bytes: Uint8Array;
  hash: string;
}

type Lifecycle = { state: "running" } | { state: "stopped" };

export class DevnetNode {
  readonly app: DevnetApp;
  readonly validator: Validator;
  readonly chainId: string;
  readonly #db: Database.Database;
  readonly #meta: MetaTable;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #blockTimeMs: number;
  readonly #historyBlocks: number;
  readonly index: TxIndex;
  readonly blockIndex: BlockIndex;
  #height: number;
  #lastTimeMs: number;
  #lastBlockId: BlockIdJson;
  #lastCommit: CommitJson | undefined;
  #appHash: string;
  #lastResultsHash: string;
  #timeOffsetMs: number;
  #paused = false;
  #lifecycle: Lifecycle = { state: "running" };
  #mempool: PendingTx[] = [];
  #checkQueue: Promise<unknown> = Promise.resolve();
  readonly #seen = new Map<string, true>();
  #timerCancel: (() => void) | undefined;
  #immediate: NodeJS.Immediate | undefined;
  readonly #listeners = new Set<(e: BusEvent) => void>();
  readonly #txWaiters = new Map<string, ((tx: CommittedTx) => void)[]>();
  readonly #stopping = new AbortController();
  readonly #insertBlock: Database.Statement;
  readonly #summaries = new Map<number, { hash: string; header: BlockJson["header"] }>();
  readonly #getBlock: Database.Statement<
    [number],
    { block_id: string; block: string; results: string; size: number; num_txs: number }
  >;

  constructor(opts: NodeOptions) {
    this.app = opts.app;
    this.validator = opts.validator;
    this.chainId = opts.app.config.chainId;
    this.#db = opts.db;
    this.#meta = new MetaTable(opts.db);
    this.#clock = opts.clock;
    this.#log = opts.logger;
    this.#blockTimeMs = opts.blockTimeMs;
    this.#historyBlocks = opts.historyBlocks;
    this.index = new TxIndex(opts.db);
    this.blockIndex = new BlockIndex(opts.db);
    this.#height = Number(this.#meta.get("height") ?? "0");
    this.#lastTimeMs = Number(this.#meta.get("last_time_ms") ?? String(opts.clock.now()));
    this.#lastBlockId = JSON.parse(this.#meta.get("last_block_id") ?? JSON.stringify(EMPTY_BLOCK_ID));
    const commit = this.#meta.get("last_commit");
    this.#lastCommit = commit ? JSON.parse(commit) : undefined;
    this.#appHash = this.#meta.get("app_hash") ?? "";
    this.#lastResultsHash = this.#meta.get("last_results_hash") ?? "";
    this.#timeOffsetMs = Number(this.#meta.get("time_offset_ms") ?? "0");
    this.#insertBlock = opts.db.prepare(
      "INSERT INTO blocks (height, hash, time_ms, num_txs, size, block_id, block, results) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.#getBlock = opts.db.prepare(
      "SELECT block_id, block, results, size, num_txs FROM blocks WHERE height = ?",
    );
  }

  get height(): number {
    return this.#height;
  }

  /** The node's time seam; RPC waits (broadcast_tx_commit) take their deadlines from it. */
  get clock(): Clock {
    return this.#clock;
  }

  get lastBlockTimeMs(): number {
    return this.#lastTimeMs;
  }

  get appHash(): string {
    return this.#appHash;
  }

  get paused(): boolean {
    return this.#paused;
  }

  get mempoolSize(): number {
    return this.#mempool.length;
  }

  get mempoolBytes(): number {
    return this.#mempool.reduce((n, t) => n + t.bytes.length, 0);
  }

  /** Lowest height still stored (history may be capped). */
  get earliestHeight(): number {
    return Number(this.#meta.get("earliest_height") ?? (this.#height > 0 ? "1" : "0"));
  }

  get genesis(): unknown {
    return JSON.parse(this.#meta.get("genesis") ?? "{}");
  }

  /** Starts block production; produces block 1 right away on a fresh chain. */
  start(): void {
    if (this.#height === 0) this.produceBlock();
    this.#schedule();
  }

  /** What a query or CheckTx sees as "the current block". */
  queryBlock(): BlockInfo {
    return {
      chainId: this.chainId,
      height: this.#height,
      timeMs: this.#lastTimeMs,
      hash: Buffer.from(this.#lastBlockId.hash, "hex"),
    };
  }

  #checkBlock(): BlockInfo {
    return { ...this.queryBlock(), height: this.#height + 1 };
  }

  subscribe(listener: (e: BusEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * broadcast_tx_*: signatures are verified in the thread pool first, in parallel across
   * requests, while CheckTx itself still runs strictly in arrival order (a client's next
   * sequence must not overtake its previous one).
   */
  broadcast(bytes: Uint8Array): Promise<TxOutcome & { hash: string }> {
    const work = this.app.signatureWork(bytes);
    const verified = Promise.all(work.map((w) => preverifySecp256k1(w.pubKey, w.message, w.signature)));
    const result = Promise.all([this.#checkQueue, verified]).then(() => this.checkAndAdd(bytes));
    this.#checkQueue = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** broadcast_tx_*: mempool admission (size and cache checks are JSON-RPC errors), then CheckTx. */
  checkAndAdd(bytes: Uint8Array): TxOutcome & { hash: string } {
    if (this.#lifecycle.state !== "running") throw internalRpcError("node is stopping");
    if (bytes.length > MAX_TX_BYTES) {
      throw internalRpcError(`Tx too large. Max size is ${MAX_TX_BYTES}, but got ${bytes.length}`);
    }
    const hash = hexUpper(sha256(bytes));
    if (this.#seen.has(hash)) throw internalRpcError("tx already exists in cache");
    if (this.#mempool.length >= MAX_MEMPOOL_TXS) {
      throw internalRpcError(
        `mempool is full: number of txs ${this.#mempool.length} (max: ${MAX_MEMPOOL_TXS}), total txs bytes ${this.mempoolBytes}`,
      );
    }
    const outcome = this.app.checkTx(bytes, this.#checkBlock());
    if (outcome.code !== 0) return { ...outcome, hash };
    this.#remember(hash);
    this.#mempool.push({ bytes, hash });
    if (this.#blockTimeMs === 0) this.#produceSoon();
    return { ...outcome, hash };
  }

  #remember(hash: string): void {
    this.#seen.set(hash, true);
    if (this.#seen.size > CACHE_SIZE) {
      const oldest = this.#seen.keys().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
  }

  /** Resolves once the tx with this hash is committed (the caller bounds the wait). */
  waitForTx(hash: string, callerSignal: AbortSignal): Promise<CommittedTx> {
    // Stopping the node ends every wait (broadcast_tx_commit must not hold up shutdown).
    const signal = AbortSignal.any([callerSignal, this.#stopping.signal]);
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const list = this.#txWaiters.get(hash) ?? [];
      const done = (tx: CommittedTx) => {
        signal.removeEventListener("abort", onAbort);
        resolve(tx);
      };
      const onAbort = () => {
        const l = this.#txWaiters.get(hash);
        if (l) {
          const i = l.indexOf(done);
          if (i >= 0) l.splice(i, 1);
          if (l.length === 0) this.#txWaiters.delete(hash);
        }
        reject(signal.reason);
      };
      list.push(done);
      this.#txWaiters.set(hash, list);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    if (this.#blockTimeMs === 0 && this.#mempool.length > 0) this.#produceSoon();
  }

  /** The next block's time jumps forward by `seconds` (kept across restarts). */
  advanceTime(seconds: number): number {
    this.#timeOffsetMs += Math.round(seconds * 1000);
    this.#meta.set("time_offset_ms", String(this.#timeOffsetMs));
    return this.#timeOffsetMs;
  }

  #produceSoon(): void {
    if (this.#paused || this.#immediate || this.#lifecycle.state !== "running") return;
    this.#immediate = setImmediate(() => {
      this.#immediate = undefined;
      if (this.#paused || this.#mempool.length === 0) return;
      this.#produceSafely();
    });
  }

  #schedule(): void {
    if (this.#blockTimeMs === 0 || this.#lifecycle.state !== "running") return;
    this.#timerCancel = this.#clock.setTimer(this.#blockTimeMs, () => {
      if (!this.#paused) this.#produceSafely();
      this.#schedule();
    });
  }

  #produceSafely(): void {
    try {
      this.produceBlock();
    } catch (err) {
      this.#log.error({ err, height: this.#height + 1 }, "block production failed");
    }
  }

  /** Executes and commits the next block with every mempool tx; returns its height. */
  produceBlock(): number {
    if (this.#lifecycle.state !== "running") throw internalRpcError("node is stopping");
    const txs = this.#takeTxs();
    const height = this.#height + 1;
    const timeMs = Math.max(this.#clock.now() + this.#timeOffsetMs, this.#lastTimeMs + 1);
    const txHashes = txs.map((t) => sha256(t.bytes));
    const header: HeaderJson = {
      version: { block: "11", app: "0" },
      chain_id: this.chainId,
      height: String(height),
      time: rfc3339(timeMs),
      last_block_id: this.#lastBlockId,
      last_commit_hash: this.#lastCommit ? hexUpper(sha256(JSON.stringify(this.#lastCommit))) : "",
      data_hash: hexUpper(sha256(...txHashes)),
      validators_hash: hexUpper(sha256(this.validator.pubKeyBase64)),
      next_validators_hash: hexUpper(sha256(this.validator.pubKeyBase64)),
      consensus_hash: hexUpper(sha256(JSON.stringify(CONSENSUS_PARAMS))),
      app_hash: this.#appHash,
      last_results_hash: this.#lastResultsHash,
      evidence_hash: hexUpper(sha256("")),
      proposer_address: this.validator.address,
    };
    const hash = sha256(JSON.stringify(header));
    const blockId = blockIdFor(hash);
    const lastCommit: CommitJson = this.#lastCommit ?? {
      height: "0",
      round: 0,
      block_id: EMPTY_BLOCK_ID,
      signatures: [],
    };
    const block: BlockJson = {
      header,
      data: { txs: txs.length > 0 ? txs.map((t) => Buffer.from(t.bytes).toString("base64")) : null },
      evidence: { evidence: [] },
      last_commit: lastCommit,
    };
    const info: BlockInfo = { chainId: this.chainId, height, timeMs, hash };
    const started = performance.now();
    let results!: BlockResultsJson;
    let committed!: CommittedTx[];
    const commit = commitFor(height, blockId, timeMs, this.validator);
    const run = this.#db.transaction(() => {
      const begin = this.app.beginBlock(info);
      const outcomes = txs.map((t) => this.app.deliverTx(t.bytes, info));
      const end = this.app.endBlock(info);
      const txResults = outcomes.map(txResultJson);
      // Each result is serialised once and reused for the hash, the block row and the index.
      const resultTexts = txResults.map((r) => JSON.stringify(r));
      const blockEvents = eventsJson([...begin, ...end]);
      const resultsHash = hexUpper(sha256(`[${resultTexts.join(",")}]`));
      const appHash = hexUpper(sha256(this.#appHash, resultsHash, JSON.stringify(blockEvents)));
      results = {
        height: String(height),
        txs_results: txResults.length > 0 ? txResults : null,
        finalize_block_events: blockEvents,
        validator_updates: [],
        consensus_param_updates: CONSENSUS_PARAMS,
        app_hash: Buffer.from(appHash, "hex").toString("base64"),
      };
      const { txs_results: _omitted, ...rest } = results;
      const resultsText = `{"txs_results":${txResults.length > 0 ? `[${resultTexts.join(",")}]` : "null"},${JSON.stringify(rest).slice(1)}`;
      const size = txs.reduce((n, t) => n + t.bytes.length, 0);
      this.#insertBlock.run(
        height,
        blockId.hash,
        timeMs,
        txs.length,
        size,
        JSON.stringify(blockId),
        JSON.stringify(block),
        resultsText,
      );
      committed = txs.map((t, i) => ({
        hash: t.hash,
        height,
        index: i,
        tx: t.bytes,
        result: txResults[i] as ExecTxResultJson,
      }));
      this.index.add(committed, resultTexts);
      this.blockIndex.add(height, blockEvents);
      this.#meta.set("height", String(height));
      this.#meta.set("last_time_ms", String(timeMs));
      this.#meta.set("last_block_id", JSON.stringify(blockId));
      this.#meta.set("last_commit", JSON.stringify(commit));
      this.#meta.set("app_hash", appHash);
      this.#meta.set("last_results_hash", resultsHash);
      this.#prune(height);
      this.#height = height;
      this.#lastTimeMs = timeMs;
      this.#lastBlockId = blockId;
      this.#lastCommit = commit;
      this.#appHash = appHash;
      this.#lastResultsHash = resultsHash;
    });
    try {
      run();
    } catch (err) {
      // Nothing of the block was stored; cached state may hold its writes.
      this.app.dropCaches();
      throw err;
    }
    this.app.resetCheckState();
    this.#recheck();
    this.#log.debug(
      { height, txs: txs.length, ms: Math.round(performance.now() - started) },
      "block committed",
    );
    this.#publish(block, blockId, results, committed);
    return height;
  }

  #takeTxs(): PendingTx[] {
    const max = Number(CONSENSUS_PARAMS.block.max_bytes);
    let bytes = 0;
    let n = 0;
    for (const t of this.#mempool) {
      if (bytes + t.bytes.length > max) break;
      bytes += t.bytes.length;
      n++;
    }
    return this.#mempool.splice(0, n);
  }

  /** Txs left in the mempool are checked again against the new state, as CometBFT does. */
  #recheck(): void {
    if (this.#mempool.length === 0) return;
    const keep: PendingTx[] = [];
    for (const t of this.#mempool) {
      if (this.app.checkTx(t.bytes, this.#checkBlock()).code === 0) keep.push(t);
      else this.#seen.delete(t.hash);
    }
    this.#mempool = keep;
    if (this.#blockTimeMs === 0 && keep.length > 0) this.#produceSoon();
  }

  #prune(height: number): void {
    if (this.#historyBlocks <= 0) return;
    const cutoff = height - this.#historyBlocks;
    if (cutoff < 1) return;
    this.#db.prepare("DELETE FROM blocks WHERE height <= ?").run(cutoff);
    this.index.prune(cutoff);
    this.blockIndex.prune(cutoff);
    this.#meta.set("earliest_height", String(cutoff + 1));
  }

  #publish(block: BlockJson, blockId: BlockIdJson, results: BlockResultsJson, txs: CommittedTx[]): void {
    for (const e of blockBusEvents(block, blockId, results, txs.length)) this.#emit(e);
    for (const tx of txs) {
      this.#emit(txBusEvent(block.header.height, tx));
      const waiters = this.#txWaiters.get(tx.hash);
      if (waiters) {
        this.#txWaiters.delete(tx.hash);
        for (const w of waiters) w(tx);
      }
    }
  }

  #emit(e: BusEvent): void {
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch (err) {
        this.#log.warn({ err }, "event listener failed");
      }
    }
  }

  blockAt(
    height: number,
  ):
    | { block_id: BlockIdJson; block: BlockJson; results: BlockResultsJson; size: number; num_txs: number }
    | undefined {
    const row = this.#getBlock.get(height);
    if (!row) return undefined;
    return {
      block_id: JSON.parse(row.block_id),
      block: JSON.parse(row.block),
      results: JSON.parse(row.results),
      size: row.size,
      num_txs: row.num_txs,
    };
  }

  /**
   * The hash and header of a block, without parsing its transactions and results (a block
   * of 10,000 leases is megabytes of JSON, and `status` is polled). Remembered per height:
   * a committed block never changes.
   */
  blockSummary(height: number): { hash: string; header: BlockJson["header"] } | undefined {
    const known = this.#summaries.get(height);
    if (known !== undefined) return known;
    const row = this.#getBlock.get(height);
    if (!row) return undefined;
    const summary = {
      hash: (JSON.parse(row.block_id) as BlockIdJson).hash,
      header: (JSON.parse(row.block) as BlockJson).header,
    };
    if (this.#summaries.size >= 64) this.#summaries.delete(this.#summaries.keys().next().value!);
    this.#summaries.set(height, summary);
    return summary;
  }

  /** Stops producing blocks; the caller closes the database afterwards. */
  stop(): void {
    if (this.#lifecycle.state === "stopped") return;
    this.#lifecycle = { state: "stopped" };
    this.#stopping.abort(internalRpcError("node is stopping"));
    this.#timerCancel?.();
    if (this.#immediate) clearImmediate(this.#immediate);
    this.#listeners.clear();
  }
}
