/**
 * The state machine: modules, the message router, the ante chain and the three execution
 * modes (CheckTx on the check state, Simulate on a throwaway copy, delivery in a block).
 * It knows nothing about blocks on disk, the mempool or RPC; the node drives it.
 */

import type Database from "better-sqlite3";
import { TxMsgData } from "cosmjs-types/cosmos/base/abci/v1beta1/abci";
import { PubKey } from "cosmjs-types/cosmos/crypto/secp256k1/keys";
import { SimulateRequest, SimulateResponse } from "cosmjs-types/cosmos/tx/v1beta1/service";
import { AuthInfo, TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import type { Any } from "cosmjs-types/google/protobuf/any";
import { moduleAddress } from "./address.ts";
import { ChainError, internalError, isChainError, sdkErrors } from "./errors.ts";
import type { GasPrice } from "./gas-price.ts";
import type {
  AppHandle,
  BlockInfo,
  ChainEvent,
  DevAccount,
  DevnetModule,
  ExecContext,
  ExecMode,
  GasMeter,
  GenesisContext,
  KeysInfo,
  ModuleFactory,
  MsgHandler,
  QueryContext,
  QueryHandler,
} from "./module.ts";
import { SECP256K1_PUBKEY_URL } from "./modules/auth/index.ts";
import { AUTH, type AuthKeeper } from "./modules/auth/types.ts";
import { BANK, type BankKeeper } from "./modules/bank/types.ts";
import { BasicGasMeter } from "./store/gas.ts";
import { ModuleStore } from "./store/module-store.ts";
import { OverlayKV, type RawKV, SqliteKV } from "./store/raw-kv.ts";
import { aminoSignDoc } from "./tx/amino.ts";
import { type AnteDeps, runAnte } from "./tx/ante.ts";
import { type DecodedTx, decodeTx } from "./tx/decode.ts";
import { addressOfPubkey, signBytes } from "./tx/verify.ts";

export interface AppConfig {
  chainId: string;
  bech32Prefix: string;
  bondDenom: string;
  /** Billing and SKU price denom: "upwr", or a factory denom chosen at init. */
  pwrDenom: string;
  authority: string;
  minGasPrice: GasPrice;
  /** Told about errors that are not ChainErrors: bugs in a handler, reported as code 1. */
  onInternalError?: (err: unknown, where: string) => void;
}

/** Outcome of one tx in any mode, in ExecTxResult terms. */
export interface TxOutcome {
  code: number;
  codespace: string;
  log: string;
  gasWanted: bigint;
  gasUsed: bigint;
  events: ChainEvent[];
  /** Encoded TxMsgData (empty on failure). */
  data: Uint8Array;
  msgResponses: Any[];
}

const INFINITE = Number.POSITIVE_INFINITY;
const SIGN_MODE_DIRECT = 1;

export class DevnetApp {
  readonly config: AppConfig;
  readonly modules: DevnetModule[] = [];
  readonly #handlers = new Map<string, MsgHandler<unknown>>();
  readonly #queries = new Map<string, QueryHandler>();
  readonly #base: SqliteKV;
  #checkState: OverlayKV;
  readonly #ante: AnteDeps;
  readonly #decoded = new WeakMap<Uint8Array, DecodedTx>();

  constructor(db: Database.Database, config: AppConfig, factories: readonly ModuleFactory[]) {
    this.config = config;
    this.#base = new SqliteKV(db);
    this.#checkState = new OverlayKV(this.#base);
    const handle: AppHandle = {
      chainId: config.chainId,
      bech32Prefix: config.bech32Prefix,
      bondDenom: config.bondDenom,
      pwrDenom: config.pwrDenom,
      authority: config.authority,
      keeper: <K>(name: string) => {
        const m = this.modules.find((x) => x.name === name);
        if (!m || m.keeper === undefined) throw new Error(`no keeper registered for module ${name}`);
        return m.keeper as K;
      },
    };
    for (const factory of factories) {
      const module = factory(handle);
      if (this.modules.some((m) => m.name === module.name))
        throw new Error(`duplicate module ${module.name}`);
      this.modules.push(module);
      for (const h of module.messages ?? []) {
        if (this.#handlers.has(h.typeUrl)) throw new Error(`duplicate message ${h.typeUrl}`);
        this.#handlers.set(h.typeUrl, h);
      }
      for (const [path, q] of Object.entries(module.queries ?? {})) this.#queries.set(path, q);
    }
    this.#ante = {
      auth: handle.keeper<AuthKeeper>(AUTH),
      bank: handle.keeper<BankKeeper>(BANK),
      chainId: config.chainId,
      bech32Prefix: config.bech32Prefix,
      minGasPrice: config.minGasPrice,
      feeCollector: moduleAddress("fee_collector", config.bech32Prefix),
      aminoSignBytes: aminoSignDoc(config.chainId),
    };
  }

  get feeCollector(): string {
    return this.#ante.feeCollector;
  }

  /** Adds query services that are not a module's (the node-level ones, see ../node-queries.ts). */
  registerQueries(queries: Record<string, QueryHandler>): void {
    for (const [path, q] of Object.entries(queries)) {
      if (this.#queries.has(path)) throw new Error(`duplicate query ${path}`);
      this.#queries.set(path, q);
    }
  }

  handler(typeUrl: string): MsgHandler<unknown> | undefined {
    return this.#handlers.get(typeUrl);
  }

  #context(raw: RawKV, mode: ExecMode, block: BlockInfo, gas: GasMeter, events: ChainEvent[]): ExecContext {
    const stores = new Map<string, ModuleStore>();
    const ctx: ExecContext = {
      mode,
      block,
      gas,
      store: (name) => {
        let s = stores.get(name);
        if (!s) {
          s = new ModuleStore(raw, name, gas);
          stores.set(name, s);
        }
        return s;
      },
      emit: (event) => {
        events.push({
          type: event.type,
          attributes: event.attributes.map((a) => ({ key: a.key, value: a.value, index: a.index ?? true })),
        });
      },
      dispatch: (any) => {
        const h = this.#handlers.get(any.typeUrl);
        if (!h) throw sdkErrors.unknownRequest.wrap(`unrecognized message type: ${any.typeUrl}`);
        let msg: unknown;
        try {
          msg = h.decode(any.value);
        } catch (err) {
          throw sdkErrors.txDecode.wrap(`failed to decode ${any.typeUrl}: ${String(err)}`);
        }
        h.validateBasic?.(msg);
        const inner: ChainEvent[] = [];
        const value = h.execute(this.#context(raw, mode, block, gas, inner), msg);
        return { response: { typeUrl: h.responseTypeUrl, value }, events: inner };
      },
      signersOf: (any) => {
        const h = this.#handlers.get(any.typeUrl);
        if (!h) throw sdkErrors.unknownRequest.wrap(`unrecognized message type: ${any.typeUrl}`);
        return h.signers(h.decode(any.value));
      },
    };
    return ctx;
  }

  #decode(bytes: Uint8Array): DecodedTx {
    return decodeTx(bytes, (url) => this.#handlers.get(url));
  }

  /**
   * Runs one tx. `parent` receives the writes only when the tx succeeds (ante writes also
   * when only a message fails, as the SDK keeps fees and sequence bumps).
   */
  #run(mode: ExecMode, bytes: Uint8Array, block: BlockInfo, parent: RawKV): TxOutcome {
    // CheckTx and delivery get the same Uint8Array from the node: decode it once.
    let tx = this.#decoded.get(bytes);
    if (!tx) {
      try {
        tx = this.#decode(bytes);
      } catch (err) {
        return failure(err, 0n, 0n);
      }
      this.#decoded.set(bytes, tx);
    }
    const gasLimit = tx.authInfo.fee?.gasLimit ?? 0n;
    const gas = new BasicGasMeter(mode === "simulate" ? INFINITE : Number(gasLimit));
    const anteKV = new OverlayKV(parent);
    const anteEvents: ChainEvent[] = [];
    try {
      runAnte(this.#context(anteKV, mode, block, gas, anteEvents), tx, this.#ante);
    } catch (err) {
      if (!isChainError(err)) this.config.onInternalError?.(err, "ante");
      return failure(err, gasLimit, BigInt(gas.used));
    }
    if (mode === "check") {
      anteKV.flush();
      return { ...success(gasLimit, gas.used, anteEvents, []), data: new Uint8Array() };
    }
    const msgKV = new OverlayKV(anteKV);
    const msgEvents: ChainEvent[] = [];
    const responses: Any[] = [];
    try {
      const ctx = this.#context(msgKV, mode, block, gas, msgEvents);
      tx.msgs.forEach((m, i) => {
        const start = msgEvents.length;
        responses.push({
          typeUrl: m.handler.responseTypeUrl,
          value: executeAt(i, () => m.handler.execute(ctx, m.msg)),
        });
        const own = msgEvents.splice(start);
        const signer = m.handler.signers(m.msg)[0];
        const message: ChainEvent = {
          type: "message",
          attributes: [{ key: "action", value: m.any.typeUrl, index: true }],
        };
        if (signer !== undefined) message.attributes.push({ key: "sender", value: signer, index: true });
        const moduleName = m.any.typeUrl.split(".")[1];
        const hasModule = own.some((e) => e.attributes.some((a) => a.key === "module"));
        if (!hasModule && moduleName)
          message.attributes.push({ key: "module", value: moduleName, index: true });
        for (const e of [message, ...own]) {
          e.attributes.push({ key: "msg_index", value: String(i), index: true });
          msgEvents.push(e);
        }
      });
    } catch (err) {
      if (!isChainError(err))
        this.config.onInternalError?.(err, `execute ${tx.msgs.map((m) => m.any.typeUrl).join(",")}`);
      // Ante effects (fee, sequence) stay; every message effect is dropped.
      if (mode === "deliver") anteKV.flush();
      return { ...failure(err, gasLimit, BigInt(gas.used)), events: mode === "deliver" ? anteEvents : [] };
    }
    msgKV.flush();
    anteKV.flush();
    return success(gasLimit, gas.used, [...anteEvents, ...msgEvents], responses);
  }

  /**
   * The (public key, sign bytes, signature) triples a tx will need checked, worked out from
   * the check state without gas or errors, so the node can verify them off the main thread
   * before CheckTx. Anything that cannot be worked out here is simply checked in CheckTx.
   */
  signatureWork(bytes: Uint8Array): { pubKey: Uint8Array; message: Uint8Array; signature: Uint8Array }[] {
    const out: { pubKey: Uint8Array; message: Uint8Array; signature: Uint8Array }[] = [];
    try {
      const raw = TxRaw.decode(bytes);
      const authInfo = AuthInfo.decode(raw.authInfoBytes);
      const ctx: QueryContext = {
        block: { chainId: this.config.chainId, height: 0, timeMs: 0, hash: new Uint8Array(32) },
        store: (name) => new ModuleStore(this.#checkState, name, new BasicGasMeter(INFINITE)),
      };
      authInfo.signerInfos.forEach((info, i) => {
        const signature = raw.signatures[i];
        // Only SIGN_MODE_DIRECT is pre-verified; other modes are checked in CheckTx.
        if (info.modeInfo?.single?.mode !== SIGN_MODE_DIRECT) return;
        if (!info.publicKey || info.publicKey.typeUrl !== SECP256K1_PUBKEY_URL || !signature) return;
        const pubKey = PubKey.decode(info.publicKey.value).key;
        if (pubKey.length !== 33) return;
        const account = this.#ante.auth.getAccount(ctx, addressOfPubkey(pubKey, this.config.bech32Prefix));
        if (!account) return;
        const message = signBytes(
          raw.bodyBytes,
          raw.authInfoBytes,
          this.config.chainId,
          account.accountNumber,
        );
        out.push({ pubKey, message, signature });
      });
    } catch {
      // Malformed: CheckTx reports it properly.
    }
    return out;
  }

  checkTx(bytes: Uint8Array, block: BlockInfo): TxOutcome {
    return this.#run("check", bytes, block, this.#checkState);
  }

  /** CheckTx on a throwaway copy of the check state (the `check_tx` RPC: nothing is kept). */
  checkTxDry(bytes: Uint8Array, block: BlockInfo): TxOutcome {
    return this.#run("check", bytes, block, new OverlayKV(this.#checkState));
  }

  /** Executes a block tx against the database (the caller holds the block's SQLite transaction). */
  deliverTx(bytes: Uint8Array, block: BlockInfo): TxOutcome {
    return this.#run("deliver", bytes, block, this.#base);
  }

  simulate(bytes: Uint8Array, block: BlockInfo): TxOutcome {
    return this.#run("simulate", bytes, block, new OverlayKV(this.#checkState));
  }

  /** After a failed block (its SQLite transaction rolled back): forget cached state. */
  dropCaches(): void {
    this.#base.dropCache();
    this.resetCheckState();
  }

  /** After a commit: CheckTx state starts again from committed state. */
  resetCheckState(): void {
    this.#checkState = new OverlayKV(this.#base);
  }

  #blockHook(kind: "beginBlock" | "endBlock", block: BlockInfo): ChainEvent[] {
    const events: ChainEvent[] = [];
    const mode = kind === "beginBlock" ? "begin_block" : "end_block";
    for (const m of this.modules) {
      const hook = m[kind];
      if (!hook) continue;
      const kv = new OverlayKV(this.#base);
      const own: ChainEvent[] = [];
      hook.call(m, this.#context(kv, mode, block, new BasicGasMeter(INFINITE), own));
      kv.flush();
      events.push(...own);
    }
    const label = kind === "beginBlock" ? "BeginBlock" : "EndBlock";
    for (const e of events) e.attributes.push({ key: "mode", value: label, index: true });
    return events;
  }

  beginBlock(block: BlockInfo): ChainEvent[] {
    return this.#blockHook("beginBlock", block);
  }

  endBlock(block: BlockInfo): ChainEvent[] {
    return this.#blockHook("endBlock", block);
  }

  initGenesis(
    block: BlockInfo,
    accounts: readonly DevAccount[],
    profile: string,
    keys: KeysInfo,
    fund: (ctx: ExecContext) => void,
  ): void {
    const events: ChainEvent[] = [];
    const ctx = this.#context(this.#base, "genesis", block, new BasicGasMeter(INFINITE), events);
    fund(ctx);
    for (const m of this.modules) {
      if (!m.initGenesis) continue;
      const gctx: GenesisContext = { ...ctx, accounts, profile, keys };
      m.initGenesis(gctx);
    }
  }

  query(
    path: string,
    data: Uint8Array,
    block: BlockInfo,
  ): { code: number; codespace: string; log: string; value: Uint8Array } {
    const ctx: QueryContext = {
      block,
      store: (name) => new ModuleStore(this.#base, name, new BasicGasMeter(INFINITE)),
    };
    try {
      if (path === "/cosmos.tx.v1beta1.Service/Simulate") return ok(this.#simulateQuery(data, block));
      const handler = this.#queries.get(path);
      if (!handler) throw sdkErrors.unknownRequest.wrap("unknown query path");
      return ok(handler(ctx, data));
    } catch (err) {
      const e = isChainError(err)
        ? err
        : sdkErrors.invalidRequest.wrap(err instanceof Error ? err.message : String(err));
      return { code: e.abciCode, codespace: e.codespace, log: e.log, value: new Uint8Array() };
    }
  }

  #simulateQuery(data: Uint8Array, block: BlockInfo): Uint8Array {
    let req: SimulateRequest;
    try {
      req = SimulateRequest.decode(data);
    } catch (err) {
      throw sdkErrors.invalidRequest.wrap(`invalid simulate request: ${String(err)}`);
    }
    if (req.txBytes.length === 0) throw sdkErrors.invalidRequest.wrap("empty txBytes is not allowed");
    const out = this.simulate(req.txBytes, block);
    if (out.code !== 0) {
      throw new ChainError(
        "sdk",
        6,
        `rpc error: code = Unknown desc = ${out.log} With gas wanted: '${out.gasWanted}' and gas used: '${out.gasUsed}' : unknown request`,
      );
    }
    return SimulateResponse.encode({
      gasInfo: { gasWanted: out.gasWanted, gasUsed: out.gasUsed },
      result: {
        data: out.data,
        log: "",
        events: out.events.map((e) => ({
          type: e.type,
          attributes: e.attributes.map((a) => ({ key: a.key, value: a.value, index: a.index ?? true })),
        })),
        msgResponses: out.msgResponses,
      },
    }).finish();
  }
}

/**
 * Runs message `index` of a tx; a failure reads as baseapp's runMsgs words it:
 * "failed to execute message; message index: N: <error>" (same code and codespace). Out of
 * gas is a panic in the SDK, recovered outside runMsgs, so it keeps its own text.
 */
function executeAt(index: number, run: () => Uint8Array): Uint8Array {
  try {
    return run();
  } catch (err) {
    if (!isChainError(err) || sdkErrors.outOfGas.is(err)) throw err;
    throw new ChainError(
      err.codespace,
      err.abciCode,
      `failed to execute message; message index: ${index}: ${err.log}`,
    );
  }
}

function ok(value: Uint8Array) {
  return { code: 0, codespace: "", log: "", value };
}

function success(gasWanted: bigint, gasUsed: number, events: ChainEvent[], responses: Any[]): TxOutcome {
  return {
    code: 0,
    codespace: "",
    log: "",
    gasWanted,
    gasUsed: BigInt(gasUsed),
    events,
    data: TxMsgData.encode({ data: [], msgResponses: responses }).finish(),
    msgResponses: responses,
  };
}

function failure(err: unknown, gasWanted: bigint, gasUsed: bigint): TxOutcome {
  const e = isChainError(err) ? err : internalError(err);
  return {
    code: e.abciCode,
    codespace: e.codespace,
    log: e.log,
    gasWanted,
    gasUsed,
    events: [],
    data: new Uint8Array(),
    msgResponses: [],
  };
}
