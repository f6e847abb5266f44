/**
 * Blocks in CometBFT 0.38's JSON shapes, built once at commit and stored as JSON so every
 * RPC read returns exactly what was published. Hashes are SHA-256 over our own canonical
 * encodings: stable and unique, not CometBFT's merkle trees (clients treat them as opaque).
 */
import { createHash, type KeyObject, sign } from "node:crypto";
import type { TxOutcome } from "./app.ts";
import type { ChainEvent } from "./module.ts";

export interface BlockIdJson {
  hash: string;
  parts: { total: number; hash: string };
}

export interface CommitJson {
  height: string;
  round: number;
  block_id: BlockIdJson;
  signatures: {
    block_id_flag: number;
    validator_address: string;
    timestamp: string;
    signature: string | null;
  }[];
}

export interface HeaderJson {
  version: { block: string; app: string };
  chain_id: string;
  height: string;
  time: string;
  last_block_id: BlockIdJson;
  last_commit_hash: string;
  data_hash: string;
  validators_hash: string;
  next_validators_hash: string;
  consensus_hash: string;
  app_hash: string;
  last_results_hash: string;
  evidence_hash: string;
  proposer_address: string;
}

export interface BlockJson {
  header: HeaderJson;
  data: { txs: string[] | null };
  evidence: { evidence: never[] };
  last_commit: CommitJson;
}

export interface EventJson {
  type: string;
  attributes: { key: string; value: string; index: boolean }[];
}

export interface ExecTxResultJson {
  code: number;
  data: string | null;
  log: string;
  info: string;
  gas_wanted: string;
  gas_used: string;
  events: EventJson[];
  codespace: string;
}

/** A transaction as committed in a block, with its result (what the tx index stores). */
export interface CommittedTx {
  hash: string;
  height: number;
  index: number;
  tx: Uint8Array;
  result: ExecTxResultJson;
}

export interface BlockResultsJson {
  height: string;
  txs_results: ExecTxResultJson[] | null;
  finalize_block_events: EventJson[];
  validator_updates: never[];
  consensus_param_updates: ConsensusParamsJson;
  app_hash: string;
}

export interface ConsensusParamsJson {
  block: { max_bytes: string; max_gas: string };
  evidence: { max_age_num_blocks: string; max_age_duration: string; max_bytes: string };
  validator: { pub_key_types: string[] };
  version: { app: string };
  abci: { vote_extensions_enable_height: string };
}

export const CONSENSUS_PARAMS: ConsensusParamsJson = {
  block: { max_bytes: "22020096", max_gas: "-1" },
  evidence: { max_age_num_blocks: "100000", max_age_duration: "172800000000000", max_bytes: "1048576" },
  validator: { pub_key_types: ["ed25519"] },
  version: { app: "0" },
  abci: { vote_extensions_enable_height: "0" },
};

export const EMPTY_BLOCK_ID: BlockIdJson = { hash: "", parts: { total: 0, hash: "" } };

export function sha256(...parts: (Uint8Array | string)[]): Buffer {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
}

export const hexUpper = (b: Uint8Array) => Buffer.from(b).toString("hex").toUpperCase();

/** RFC 3339 UTC with nanosecond precision, as CometBFT prints times. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000000Z");
}

export function eventsJson(events: ChainEvent[]): EventJson[] {
  return events.map((e) => ({
    type: e.type,
    attributes: e.attributes.map((a) => ({ key: a.key, value: a.value, index: a.index ?? true })),
  }));
}

export function txResultJson(r: TxOutcome): ExecTxResultJson {
  return {
    code: r.code,
    data: r.data.length > 0 ? Buffer.from(r.data).toString("base64") : null,
    log: r.log,
    info: "",
    gas_wanted: r.gasWanted.toString(),
    gas_used: r.gasUsed.toString(),
    events: eventsJson(r.events),
    codespace: r.codespace,
  };
}

export function blockIdFor(hash: Buffer): BlockIdJson {
  return { hash: hexUpper(hash), parts: { total: 1, hash: hexUpper(sha256("part", hash)) } };
}

export interface Validator {
  address: string;
  pubKeyBase64: string;
  privateKey: KeyObject;
}

/** The commit that seals block `height` (carried as last_commit of the next block). */
export function commitFor(height: number, blockId: BlockIdJson, timeMs: number, v: Validator): CommitJson {
  const signature = sign(null, Buffer.from(`${height}/${blockId.hash}`), v.privateKey).toString("base64");
  return {
    height: String(height),
    round: 0,
    block_id: blockId,
    signatures: [{ block_id_flag: 2, validator_address: v.address, timestamp: rfc3339(timeMs), signature }],
  };
}

/** Flattens events into CometBFT's `<type>.<key>` → values map (empty types and keys skipped). */
export function eventMap(
  events: EventJson[] | ChainEvent[],
  extra: Record<string, string[]>,
): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  for (const e of events) {
    if (e.type === "") continue;
    for (const a of e.attributes) {
      if (a.key === "") continue;
      const k = `${e.type}.${a.key}`;
      const list = map[k];
      if (list) list.push(a.value);
      else map[k] = [a.value];
    }
  }
  return { ...map, ...extra };
}
