/**
 * The devnet module framework: the one contract between the node core and the state
 * machines that run on it (x/auth, x/bank here; x/sku, x/billing, x/authz next).
 *
 * How a module plugs in
 * ---------------------
 * 1. Write a factory `(app: AppHandle) => DevnetModule` in `src/devnet/modules/<name>/index.ts`.
 *    The factory runs once per node, in registration order; `app.keeper("bank")` returns the
 *    keeper of a module registered earlier (so billing, registered after bank, can move coins).
 * 2. Add the factory to `moduleFactories` in `src/devnet/modules/index.ts` (one import + one
 *    line). Order there = genesis order = BeginBlock/EndBlock order.
 * 3. The node core never changes: it decodes each tx, runs the ante checks (signatures,
 *    sequences, fees), then routes every message by its type URL to the owning module.
 *
 * Everything is synchronous. State lives in SQLite (better-sqlite3 is synchronous), a block
 * executes in one go, and handlers must not await: return values, throw `ChainError`.
 *
 * State: an ordered key-value store
 * ---------------------------------
 * `ctx.store(name)` returns the `KVStore` of module `name` (keys are namespaced by module, so
 * modules cannot collide). Keys are strings compared by their UTF-8 bytes (keep them ASCII and
 * zero-pad numbers you want sorted); values are bytes (protobuf, or JSON via `readJson` /
 * `writeJson`). Every write happens inside a transaction: a message that throws is rolled
 * back together with every other message of its tx (fees and sequence bumps stay, as in the
 * SDK), and nothing is durable until the block commits. Store access is metered with the SDK's
 * KV gas table (read 1000 + 3/byte, write 2000 + 30/byte, has/delete 1000, 30 per iterated
 * item), so handlers only call `ctx.gas.consume` for work that is not store access.
 *
 * Events
 * ------
 * `ctx.emit({type, attributes:[{key, value}]})` with plain string values (coins in SDK string
 * form such as `1000umfx`, integers base 10). The core adds what the SDK adds: a leading
 * `message` event (`action` = type URL, `sender` = first signer, `module` = second dotted
 * part of the type URL) and a `msg_index` attribute on every event of a message; ante events
 * (fee transfer, `tx` fee/acc_seq/signature) precede them; events emitted by `endBlock` get
 * `mode=EndBlock` (`beginBlock`: `mode=BeginBlock`). Events of a failed tx are dropped.
 *
 * Errors
 * ------
 * Throw `ChainError` (see `./errors.ts`): `defineError("billing", 6, "unauthorized")` makes a
 * registered error; `.wrap("tenant may not acknowledge")` gives the SDK log text
 * `tenant may not acknowledge: unauthorized`. validateBasic errors are returned at CheckTx
 * (broadcast_tx_sync answers with that code); execute errors fail the tx in the block.
 * Anything else thrown is a bug and is reported as an internal error (code 1, codespace undefined).
 */
import type { Any } from "cosmjs-types/google/protobuf/any";

/** One attribute of an event: plain UTF-8 strings, `key` non-empty. */
export interface EventAttribute {
  key: string;
  value: string;
  /** CometBFT indexes attributes with index=true; the core defaults it to true. */
  index?: boolean;
}

export interface ChainEvent {
  type: string;
  attributes: EventAttribute[];
}

/** Ordered, transactional key-value store of one module (see the header comment). */
export interface KVStore {
  get(key: string): Uint8Array | undefined;
  has(key: string): boolean;
  set(key: string, value: Uint8Array): void;
  delete(key: string): void;
  /**
   * Entries in key order (or reverse). `prefix` limits to keys starting with it; `start`
   * (inclusive) and `end` (exclusive) bound the range further. Iterating while writing is
   * allowed: the iterator reads in pages and continues after the last key it returned.
   */
  iterate(range?: KVRange): IterableIterator<[string, Uint8Array]>;
}

export interface KVRange {
  prefix?: string;
  start?: string;
  end?: string;
  reverse?: boolean;
  /** Stop after this many entries. */
  limit?: number;
}

export interface GasMeter {
  readonly limit: number;
  readonly used: number;
  /** Adds `amount`; throws the SDK out-of-gas ChainError (code 11) when the limit is passed. */
  consume(amount: number, descriptor: string): void;
}

export interface BlockInfo {
  chainId: string;
  /** Height of the block being executed (0 during genesis). */
  height: number;
  /** Block time in ms since the Unix epoch (the header time; devnet_advance_time moves it). */
  timeMs: number;
  /** Header hash of the block being executed (32 bytes; zeroes during genesis). */
  hash: Uint8Array;
}

export type ExecMode = "genesis" | "check" | "simulate" | "deliver" | "begin_block" | "end_block";

/** What every handler and hook receives: state, gas, events, block facts and the router. */
export interface ExecContext {
  readonly mode: ExecMode;
  readonly block: BlockInfo;
  readonly gas: GasMeter;
  /** The store of module `moduleName` inside the current transaction. */
  store(moduleName: string): KVStore;
  emit(event: ChainEvent): void;
  /**
   * Runs one message through the router as part of the current message (authz MsgExec):
   * decode, validateBasic, execute. Its events are collected, not emitted (the SDK runs an
   * inner message on a fresh event manager; the caller re-emits them, e.g. with
   * `authz_msg_index`, and no `message` event is added). Throws the message's ChainError on
   * failure. The caller checks who may act for the signers.
   */
  dispatch(msg: Any): { response: Any; events: ChainEvent[] };
  /** Signers of an encoded message as its handler reports them (authz needs the granter). */
  signersOf(msg: Any): string[];
}

/** One message type a module handles. */
export interface MsgHandler<T = unknown> {
  /** e.g. "/cosmos.bank.v1beta1.MsgSend". */
  typeUrl: string;
  /** Response type URL put into TxMsgData.msg_responses, e.g. "/cosmos.bank.v1beta1.MsgSendResponse". */
  responseTypeUrl: string;
  /** Protobuf bytes → message; throw (any error) for malformed bytes: reported as code 2 tx parse error. */
  decode(bytes: Uint8Array): T;
  /** Bech32 addresses that must sign (the SDK's cosmos.msg.v1.signer fields), first one = `sender`. */
  signers(msg: T): string[];
  /** Stateless checks, run at CheckTx and before execute. Throw ChainError. */
  validateBasic?(msg: T): void;
  /** State transition. Returns the encoded response message (empty Uint8Array for empty responses). */
  execute(ctx: ExecContext, msg: T): Uint8Array;
}

/** Read-only context of an ABCI query: committed state at the latest height. */
export interface QueryContext {
  readonly block: BlockInfo;
  store(moduleName: string): KVStore;
}

/** ABCI query handler: request protobuf bytes → response protobuf bytes; throw ChainError. */
export type QueryHandler = (ctx: QueryContext, request: Uint8Array) => Uint8Array;

export interface DevAccount {
  /** "provider", "tenant1" … "tenantN", "faucet". */
  name: string;
  address: string;
}

/** What `fred devnet keys` prints besides the accounts; filled by genesis hooks. */
export interface KeysInfo {
  provider_uuid: string;
  skus: { uuid: string; name: string; billing_only: boolean }[];
}

export interface GenesisContext extends ExecContext {
  /** The dev accounts created by `fred devnet init`, already funded by bank genesis. */
  readonly accounts: readonly DevAccount[];
  /** `--profile` of `fred devnet init` ("default" unless given, e.g. "bench"). */
  readonly profile: string;
  /** Written to the keys file after genesis; mutate it. */
  readonly keys: KeysInfo;
}

export interface DevnetModule {
  /** Module name: store namespace, `module` event attribute, keeper lookup key. */
  name: string;
  messages?: MsgHandler<unknown>[];
  /** ABCI query path (e.g. "/cosmos.bank.v1beta1.Query/Balance") → handler. */
  queries?: Record<string, QueryHandler>;
  /** The object other modules get from `app.keeper(name)`; its methods take an ExecContext. */
  keeper?: unknown;
  initGenesis?(ctx: GenesisContext): void;
  beginBlock?(ctx: ExecContext): void;
  endBlock?(ctx: ExecContext): void;
}

/** Chain-wide facts and cross-module access handed to module factories. */
export interface AppHandle {
  readonly chainId: string;
  /** "manifest". */
  readonly bech32Prefix: string;
  /** Fee and staking denom, "umfx". */
  readonly bondDenom: string;
  /** Denom of credit, lease prices and withdrawals: "upwr" or e.g. "factory/<admin>/upwr". */
  readonly pwrDenom: string;
  /** The module authority (gov module address unless configured). */
  readonly authority: string;
  /** Keeper of a module registered earlier; throws if there is none. */
  keeper<K>(moduleName: string): K;
}

export type ModuleFactory = (app: AppHandle) => DevnetModule;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Reads a JSON value written by `writeJson`; undefined when the key is absent. */
export function readJson<T>(store: KVStore, key: string): T | undefined {
  const raw = store.get(key);
  return raw === undefined ? undefined : (JSON.parse(decoder.decode(raw)) as T);
}

export function writeJson(store: KVStore, key: string, value: unknown): void {
  store.set(key, encoder.encode(JSON.stringify(value)));
}
