/**
 * Sends one transaction and sees it through: simulate → gas plan → sign → broadcast_tx_sync
 * → confirmation by polling the tx index every `txPollIntervalMs`, all inside `txTimeoutMs`
 * (which also covers waiting for the key and every retry). Retries (at most `maxAttempts`):
 * a sequence mismatch re-signs at the sequence the node expects, out-of-gas climbs the gas
 * ladder, an unreachable node (nothing sent) backs off. A tx that was broadcast is never
 * broadcast again: if it is not included before the deadline the caller gets ERR_TX_TIMEOUT
 * with its hash — the outcome is unknown, not failed.
 * The sequence owner below is the pipeline's per-key gate: it holds the key's account
 * number and sequence and lets one send at a time sign with them.
 */
import { createHash } from "node:crypto";
import type { EncodeObject, Registry } from "@cosmjs/proto-signing";
import { accountFromAny } from "@cosmjs/stargate";
import { BinaryReader } from "cosmjs-types/binary";
import { QueryAccountRequest, QueryAccountResponse } from "cosmjs-types/cosmos/auth/v1beta1/query";
import { GasInfo, TxMsgData } from "cosmjs-types/cosmos/base/abci/v1beta1/abci";
import { SimulateRequest } from "cosmjs-types/cosmos/tx/v1beta1/service";
import type { Any } from "cosmjs-types/google/protobuf/any";
import { Backoff, sleepOrAbort, withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { MsgAcknowledgeLease, MsgCloseLease, MsgRejectLease, MsgWithdraw } from "../proto/index.ts";
import { feeFor, type GasConfig, type GasSource, outOfGasRetry, planGas } from "../tx/build.ts";
import { classifyCode, classifyRpcError, expectedSequence, type TxFailure } from "../tx/classify.ts";
import { abciQuery, chainError, type NodeConnection } from "./rpc.ts";
import { buildSignedTx, buildSimulationTx, type TxSigner } from "./signer.ts";

export interface TxPipelineOptions {
  conn: NodeConnection;
  registry: Registry;
  chainId: string;
  gas: GasConfig;
  clock: Clock;
  txTimeoutMs: number;
  txPollIntervalMs: number;
  simulateTimeoutMs?: number;
  maxAttempts?: number;
  /** Delay before re-trying after the node was unreachable, per attempt. */
  retryDelaysMs?: readonly number[];
  metrics?: TxMetrics;
  logger?: Logger;
  /** Human progress lines (the CLI prints them on stderr). */
  onProgress?: (line: string) => void;
  /**
   * A simulation whose message fails to execute: `broadcast` (default) sends the tx anyway
   * on the gas_limit fallback, so providerd's callers see the delivered failure they
   * classify (the chain may also have moved by then); `refuse` throws
   * `ERR_TX_SIMULATION_REFUSED` before anything is signed, so a person's command pays no
   * fee for a transaction the chain would fail (the CLI's choice).
   */
  failedSimulation?: "broadcast" | "refuse";
}

/**
 * A Simulate answer read for its gas only. Its `result` (field 2) carries every message's
 * events: for an acknowledgement of 1,000 leases, megabytes of attribute strings that a full
 * decode turned into JavaScript strings only to drop them. It is skipped, not decoded.
 */
export const SimulatedGas = {
  decode(bytes: Uint8Array): { gasInfo: GasInfo | undefined } {
    const reader = new BinaryReader(bytes);
    let gasInfo: GasInfo | undefined;
    while (reader.pos < reader.len) {
      const tag = reader.uint32();
      if (tag >>> 3 === 1 && (tag & 7) === 2) gasInfo = GasInfo.decode(reader, reader.uint32());
      else reader.skipType(tag & 7);
    }
    return { gasInfo };
  },
};

/** How the node words a message that failed to execute, in Simulate's query log. */
const EXECUTION_FAILED = /failed to execute message/;

export interface TxResult {
  txHash: string;
  height: number;
  code: number;
  codespace: string;
  rawLog: string;
  gasWanted: number;
  gasUsed: number;
  fee: bigint;
  gasSource: GasSource;
  msgResponses: Any[];
}

export class TxMetrics {
  readonly outcomes = new Map<string, number>();
  gasUsed = 0;
  readonly feesPaid = new Map<string, bigint>();
  broadcasts = 0;
  simulationFailures = 0;

  /** Sent transactions by "type outcome" (fred_chain_transactions_total). */
  readonly transactions = new Map<`${TxType} ${"success" | "failed"}`, number>();

  /**
   * Hears each ABCI query's path and duration (fred_chain_query_duration_seconds); the
   * metrics registration sets it, the node connection calls it.
   */
  onQuery: (path: string, seconds: number) => void = () => {};

  count(outcome: string): void {
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
  }

  transaction(type: TxType, outcome: "success" | "failed"): void {
    const key = `${type} ${outcome}` as const;
    this.transactions.set(key, (this.transactions.get(key) ?? 0) + 1);
  }
}

/** What a transaction does, by its first lease message (authz MsgExec looked through). */
export type TxType = "acknowledge" | "reject" | "close" | "withdraw" | "other";

const TX_TYPES: Readonly<Record<string, TxType>> = {
  [MsgAcknowledgeLease.typeUrl]: "acknowledge",
  [MsgRejectLease.typeUrl]: "reject",
  [MsgCloseLease.typeUrl]: "close",
  [MsgWithdraw.typeUrl]: "withdraw",
};

export function txType(messages: readonly EncodeObject[]): TxType {
  for (const m of messages) {
    const inner =
      m.typeUrl === "/cosmos.authz.v1beta1.MsgExec"
        ? ((m.value as { msgs?: { typeUrl: string }[] }).msgs ?? []).map((x) => x.typeUrl)
        : [m.typeUrl];
    for (const url of inner) {
      const type = TX_TYPES[url];
      if (type !== undefined) return type;
    }
  }
  return "other";
}

type Sent =
  | { kind: "broadcast"; hash: string; gas: number; gasSource: GasSource; fee: bigint }
  | { kind: "retry"; failure: TxFailure; detail: string; gas?: number };

export function txHashOf(txBytes: Uint8Array): string {
  return createHash("sha256").update(txBytes).digest("hex").toUpperCase();
}

// ---- the sequence owner ----

/** The signing account as the chain numbers it: its account number and next sequence. */
export interface AccountState {
  accountNumber: bigint;
  sequence: number;
}

/**
 * One in-process owner of each signing key's sequence. Signing and broadcasting run one at
 * a time per key (a FIFO mutex), so two sends never race one sequence number. After a
 * broadcast passes CheckTx the node has already bumped the account's sequence in its check
 * state, while queries still read the committed one — so the owner keeps counting locally
 * instead of re-reading, and re-reads only when told the count is wrong.
 */
export class SequenceOwner {
  readonly address: string;
  readonly #fetch: (signal?: AbortSignal) => Promise<AccountState>;
  #state: AccountState | undefined;
  #tail: Promise<void> = Promise.resolve();

  constructor(address: string, fetch: (signal?: AbortSignal) => Promise<AccountState>) {
    this.address = address;
    this.#fetch = fetch;
  }

  /**
   * Runs `fn` with exclusive use of the key. `fn` receives the sequence to sign with and
   * returns whether that sequence was consumed (the tx passed CheckTx).
   */
  async exclusive<T>(
    fn: (account: AccountState) => Promise<{ value: T; consumed: boolean }>,
    signal?: AbortSignal,
  ): Promise<T> {
    const previous = this.#tail;
    let release: () => void = () => {};
    this.#tail = new Promise<void>((r) => {
      release = r;
    });
    try {
      await previous;
      signal?.throwIfAborted();
      if (this.#state === undefined) this.#state = await this.#fetch(signal);
      const account = { ...this.#state };
      const { value, consumed } = await fn(account);
      if (consumed && this.#state !== undefined) this.#state = { ...account, sequence: account.sequence + 1 };
      return value;
    } finally {
      release();
    }
  }

  /** The node said which sequence it expects: believe it. */
  correct(expected: number | undefined): void {
    if (expected === undefined || this.#state === undefined) this.#state = undefined;
    else this.#state = { ...this.#state, sequence: expected };
  }

  /** Forget the cached state; the next send re-reads the account. */
  invalidate(): void {
    this.#state = undefined;
  }

  get cached(): AccountState | undefined {
    return this.#state === undefined ? undefined : { ...this.#state };
  }
}

// ---- the pipeline ----

export class TxPipeline {
  readonly signer: TxSigner;
  readonly owner: SequenceOwner;
  readonly metrics: TxMetrics;
  readonly #options: TxPipelineOptions;

  constructor(opts: TxPipelineOptions, signer: TxSigner) {
    this.#options = opts;
    this.signer = signer;
    this.metrics = opts.metrics ?? new TxMetrics();
    this.owner = new SequenceOwner(signer.address, (signal) => this.#readAccount(signal));
  }

  async #readAccount(signal?: AbortSignal): Promise<AccountState> {
    let res: QueryAccountResponse;
    try {
      res = await abciQuery(
        this.#options.conn,
        "/cosmos.auth.v1beta1.Query/Account",
        QueryAccountRequest,
        QueryAccountResponse,
        QueryAccountRequest.fromPartial({ address: this.signer.address }),
        signal,
      );
    } catch (err) {
      if (err instanceof FredError && err.code === "ERR_CHAIN_NOT_FOUND")
        throw new FredError(
          "ERR_CHAIN_ACCOUNT_NOT_FOUND",
          `account ${this.signer.address} does not exist on chain (fund it first)`,
        );
      throw err;
    }
    if (res.account === undefined)
      throw new FredError(
        "ERR_CHAIN_ACCOUNT_NOT_FOUND",
        `account ${this.signer.address} does not exist on chain`,
      );
    const acct = accountFromAny(res.account);
    return { accountNumber: BigInt(acct.accountNumber), sequence: acct.sequence };
  }

  /**
   * Gas used by a simulation; undefined when it failed (the gas_limit fallback applies), or
   * the sequence the node expects when the simulation says ours is stale (re-sign instead).
   */
  async #simulate(
    sequence: number,
    messages: readonly EncodeObject[],
    memo: string,
  ): Promise<number | undefined | { staleSequence: number }> {
    const tx = buildSimulationTx(this.#options.registry, this.signer, sequence, messages, memo);
    try {
      const ms = this.#options.simulateTimeoutMs ?? 5000;
      const timedOut = () => new FredError("ERR_CHAIN_SIMULATE_TIMEOUT", `simulation took over ${ms} ms`);
      const res = await withDeadline(this.#options.clock, ms, undefined, timedOut, (signal) =>
        abciQuery(
          this.#options.conn,
          "/cosmos.tx.v1beta1.Service/Simulate",
          SimulateRequest,
          SimulatedGas,
          SimulateRequest.fromPartial({ txBytes: tx }),
          signal,
        ),
      );
      const used = Number(res.gasInfo?.gasUsed ?? 0n);
      if (!(used > 0)) throw new FredError("ERR_CHAIN_SIMULATE", "simulation reported no gas");
      return used;
    } catch (err) {
      // A stale sequence must not be papered over by the fallback gas: re-sign instead.
      const text = (err as Error).message ?? "";
      const expected = expectedSequence(text);
      if (expected !== undefined) return { staleSequence: expected };
      if (this.#options.failedSimulation === "refuse" && EXECUTION_FAILED.test(text)) {
        // The node appends its gas figures and the query's own error; only the cause matters.
        const log = text.slice(text.search(EXECUTION_FAILED)).replace(/ With gas wanted: .*$/s, "");
        throw new FredError(
          "ERR_TX_SIMULATION_REFUSED",
          `the chain refused the transaction in simulation; nothing was broadcast: ${log}`,
          { details: { log }, cause: err },
        );
      }
      this.metrics.simulationFailures++;
      this.#options.logger?.warn(
        { err: (err as Error).message },
        "gas simulation failed; using the gas_limit fallback",
      );
      return undefined;
    }
  }

  /** Sends `messages` in one tx; resolves once it is included (code 0), else throws. */
  async send(
    messages: readonly EncodeObject[],
    opts: { memo?: string; signal?: AbortSignal } = {},
  ): Promise<TxResult> {
    const type = txType(messages);
    try {
      const result = await this.#send(messages, opts);
      this.metrics.transaction(type, "success");
      return result;
    } catch (err) {
      this.metrics.transaction(type, "failed");
      throw err;
    }
  }

  async #send(
    messages: readonly EncodeObject[],
    opts: { memo?: string; signal?: AbortSignal },
  ): Promise<TxResult> {
    const { clock } = this.#options;
    const deadline = clock.now() + this.#options.txTimeoutMs;
    const maxAttempts = this.#options.maxAttempts ?? 3;
    // Sequence and out-of-gas retries go again at once; only "node unreachable" waits.
    const unreachable = new Backoff(this.#options.retryDelaysMs ?? [1000, 3000]);
    const memo = opts.memo ?? "";
    let gasOverride: number | undefined;
    let lastFailure = "";
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      opts.signal?.throwIfAborted();
      if (clock.now() >= deadline) break;
      const sent = await this.owner.exclusive(
        async (acct) => this.#signAndBroadcast(acct, messages, memo, gasOverride),
        opts.signal,
      );
      if (sent.kind === "retry") {
        lastFailure = sent.detail;
        if (sent.failure.kind === "sequence") {
          this.owner.correct(sent.failure.expected);
          this.#options.onProgress?.(`sequence mismatch; re-signing (attempt ${attempt + 1})`);
          continue;
        }
        if (sent.failure.kind === "out_of_gas") {
          // Refused at CheckTx (the ante handler ran out): climb the ladder, nothing was spent.
          const next = sent.gas === undefined ? undefined : outOfGasRetry(sent.gas, this.#options.gas);
          if (next === undefined) break;
          this.metrics.count("out_of_gas_retry");
          gasOverride = next;
          this.#options.onProgress?.(`out of gas at ${sent.gas} in CheckTx; retrying with ${next}`);
          continue;
        }
        const delay = unreachable.next();
        if (clock.now() + delay >= deadline) break;
        await sleepOrAbort(clock, delay, opts.signal);
        continue;
      }
      this.#options.onProgress?.(`broadcast ${sent.hash}; waiting for inclusion`);
      const included = await this.#waitForTx(sent.hash, deadline, opts.signal);
      this.metrics.gasUsed += included.gasUsed;
      this.metrics.feesPaid.set(
        this.#options.gas.feeDenom,
        (this.metrics.feesPaid.get(this.#options.gas.feeDenom) ?? 0n) + sent.fee,
      );
      const result: TxResult = { ...included, fee: sent.fee, gasSource: sent.gasSource };
      if (included.code === 0) {
        this.metrics.count("success");
        return result;
      }
      const failure = classifyCode(included.code, included.codespace, included.rawLog);
      if (failure.kind === "out_of_gas") {
        const next = outOfGasRetry(sent.gas, this.#options.gas);
        if (next !== undefined && attempt < maxAttempts) {
          this.metrics.count("out_of_gas_retry");
          gasOverride = next;
          lastFailure = included.rawLog;
          this.#options.onProgress?.(`out of gas at ${sent.gas}; retrying with ${next}`);
          continue;
        }
      }
      this.metrics.count("failed");
      throw new FredError(
        "ERR_TX_FAILED",
        `tx ${included.txHash} failed with code ${included.code} (${included.codespace}): ${included.rawLog}`,
        {
          details: {
            tx_hash: included.txHash,
            height: included.height,
            code: included.code,
            codespace: included.codespace,
            log: included.rawLog,
            failure,
          },
        },
      );
    }
    this.metrics.count("gave_up");
    throw new FredError(
      "ERR_TX_RETRIES_EXHAUSTED",
      `transaction not sent: ${lastFailure || "deadline reached before broadcast"}`,
      { retryable: true },
    );
  }

  async #signAndBroadcast(
    acct: AccountState,
    messages: readonly EncodeObject[],
    memo: string,
    gasOverride: number | undefined,
  ): Promise<{ value: Sent; consumed: boolean }> {
    let gas: number;
    let gasSource: GasSource;
    if (gasOverride !== undefined) {
      gas = gasOverride;
      gasSource = "retry";
    } else {
      const simulated = await this.#simulate(acct.sequence, messages, memo);
      if (typeof simulated === "object") {
        return {
          value: {
            kind: "retry",
            failure: { kind: "sequence", expected: simulated.staleSequence },
            detail: "sequence mismatch at simulation",
          },
          consumed: false,
        };
      }
      const plan = planGas(simulated, this.#options.gas);
      gas = plan.gas;
      gasSource = plan.source;
    }
    const fee = feeFor(gas, this.#options.gas.gasPrice);
    const tx = buildSignedTx({
      registry: this.#options.registry,
      signer: this.signer,
      chainId: this.#options.chainId,
      accountNumber: acct.accountNumber,
      sequence: acct.sequence,
      messages,
      memo,
      gas,
      fee: { denom: this.#options.gas.feeDenom, amount: fee.toString() },
    });
    const hash = txHashOf(tx);
    this.metrics.broadcasts++;
    let res: Awaited<ReturnType<NodeConnection["comet"]["broadcastTxSync"]>>;
    try {
      res = await this.#options.conn.comet.broadcastTxSync({ tx });
    } catch (err) {
      const failure = classifyRpcError(err);
      const text = `${(err as Error).message} ${((err as Error).cause as Error | undefined)?.message ?? ""}`;
      if (failure.kind === "in_mempool")
        return { value: { kind: "broadcast", hash, gas, gasSource, fee }, consumed: true };
      if (failure.kind === "sequence")
        return { value: { kind: "retry", failure, detail: text }, consumed: false };
      if (/ECONNREFUSED/.test(text)) {
        // Nothing reached the node: safe to try again.
        return { value: { kind: "retry", failure: { kind: "transient" }, detail: text }, consumed: false };
      }
      // The request may or may not have reached the mempool: never send a second tx, wait for this one.
      this.#options.logger?.warn(
        { tx_hash: hash, err: text },
        "broadcast outcome unknown; waiting for the tx instead of re-sending",
      );
      return { value: { kind: "broadcast", hash, gas, gasSource, fee }, consumed: true };
    }
    if (res.code === 0) return { value: { kind: "broadcast", hash, gas, gasSource, fee }, consumed: true };
    const codespace = res.codespace ?? "";
    const log = res.log ?? "";
    const failure = classifyCode(res.code, codespace, log);
    if (failure.kind === "sequence")
      return { value: { kind: "retry", failure, detail: log }, consumed: false };
    if (failure.kind === "out_of_gas")
      return { value: { kind: "retry", failure, detail: log, gas }, consumed: false };
    if (failure.kind === "in_mempool")
      return { value: { kind: "broadcast", hash, gas, gasSource, fee }, consumed: true };
    this.metrics.count(failure.kind === "insufficient_fee" ? "insufficient_fee" : "check_tx_failed");
    throw new FredError(
      failure.kind === "insufficient_fee" ? "ERR_TX_INSUFFICIENT_FEE" : "ERR_TX_REJECTED",
      `tx refused at CheckTx with code ${res.code} (${codespace}): ${log}`,
      { details: { code: res.code, codespace, log, gas, fee: fee.toString() } },
    );
  }

  async #waitForTx(
    hash: string,
    deadline: number,
    signal?: AbortSignal,
  ): Promise<Omit<TxResult, "fee" | "gasSource">> {
    const { clock } = this.#options;
    for (;;) {
      const wait = Math.min(this.#options.txPollIntervalMs, Math.max(0, deadline - clock.now()));
      await clock.sleep(wait, signal);
      try {
        const found = await this.#options.conn.comet.txSearch({ query: `tx.hash='${hash}'` });
        const tx = found.txs[0];
        if (tx !== undefined) {
          const data = tx.result.data;
          return {
            txHash: hash,
            height: tx.height,
            code: tx.result.code,
            codespace: tx.result.codespace ?? "",
            rawLog: tx.result.log ?? "",
            gasWanted: Number(tx.result.gasWanted),
            gasUsed: Number(tx.result.gasUsed),
            msgResponses: data !== undefined && data.length > 0 ? TxMsgData.decode(data).msgResponses : [],
          };
        }
      } catch (err) {
        this.#options.logger?.debug(
          { tx_hash: hash, err: chainError(err, "tx_search").message },
          "tx lookup failed; polling on",
        );
      }
      if (clock.now() >= deadline) {
        this.metrics.count("timeout");
        throw new FredError(
          "ERR_TX_TIMEOUT",
          `tx ${hash} was broadcast but not seen in a block within tx_timeout; its outcome is unknown`,
          {
            retryable: true,
            details: { tx_hash: hash },
          },
        );
      }
    }
  }
}
