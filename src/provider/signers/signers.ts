/**
 * providerd's signers: with `sub_signer_count: 0` the provider key sends everything (one
 * ack lane); with N > 0, N authz sub-signer lanes derived from FRED_MNEMONIC carry the
 * lease txs (acknowledge, reject, close) while withdrawals, grants and top-ups stay on the
 * provider key. Startup refuses a mnemonic whose account 0 is not the provider key.
 */
import { privateKeyFromMnemonic } from "../../auth/keys.ts";
import type { CosmosChain } from "../../chain/cosmos/adapter.ts";
import { signerFromKey } from "../../chain/cosmos/signer.ts";
import type { SignerLanes } from "../../chain/cosmos/signer-lanes.ts";
import { deriveSubSigners, MAX_SUB_SIGNERS } from "../../chain/cosmos/sub-signers.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError, isFredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import type { ProviderConfig } from "../config/index.ts";
import { SignerSupervisor } from "./supervisor.ts";

export interface Signers {
  /** Ack batcher lanes: one per sub-signer, or 1 (the provider key). */
  lanes: number;
  subLanes: SignerLanes | undefined;
  supervisor: SignerSupervisor | undefined;
  stop(): Promise<void>;
}

type SignerConfig = Pick<
  ProviderConfig,
  | "subSignerCount"
  | "subSignerMinBalance"
  | "subSignerTopUpAmount"
  | "subSignerFundCheckIntervalMs"
  | "bech32Prefix"
  | "providerAddress"
>;

/** The sub-signer keys, after proving FRED_MNEMONIC is the provider's own mnemonic. */
export function subSignerKeys(config: SignerConfig, mnemonic: string | undefined) {
  const n = config.subSignerCount;
  if (mnemonic === undefined || mnemonic.trim() === "")
    throw new FredError(
      "ERR_CONFIG",
      `sub_signer_count is ${n}: set FRED_MNEMONIC to the provider key's mnemonic (the sub-signer keys are derived from it)`,
    );
  if (n > MAX_SUB_SIGNERS)
    throw new FredError("ERR_CONFIG", `sub_signer_count must be at most ${MAX_SUB_SIGNERS}, got ${n}`);
  let account0: string;
  try {
    account0 = signerFromKey(privateKeyFromMnemonic(mnemonic), config.bech32Prefix).address;
  } catch (err) {
    if (isFredError(err, "ERR_MNEMONIC"))
      throw new FredError("ERR_MNEMONIC", `FRED_MNEMONIC: ${err.message}`, { cause: err });
    throw err;
  }
  if (account0 !== config.providerAddress)
    throw new FredError(
      "ERR_PROVIDER_KEY_MISMATCH",
      `FRED_MNEMONIC is not the provider key's mnemonic: its account 0 (m/44'/118'/0'/0/0) is ${account0}, but provider_address is ${config.providerAddress}`,
    );
  return deriveSubSigners(mnemonic, n, config.bech32Prefix);
}

export async function startSigners(deps: {
  config: SignerConfig;
  mnemonic: string | undefined;
  chain: CosmosChain;
  clock: Clock;
  logger: Logger;
}): Promise<Signers> {
  const { config, chain, clock, logger } = deps;
  if (config.subSignerCount === 0)
    return { lanes: 1, subLanes: undefined, supervisor: undefined, stop: async () => {} };
  const subs = subSignerKeys(config, deps.mnemonic);
  let supervisor: SignerSupervisor | undefined;
  const lanes = chain.enableSubSigners(
    subs,
    { minBalance: config.subSignerMinBalance, topUpAmount: config.subSignerTopUpAmount },
    (lane, fault, err) => {
      logger.warn(
        { lane: lane.index, address: lane.address, fault, err: (err as Error).message },
        "sub-signer lane restarted; re-checking its grants and funds",
      );
      supervisor?.trigger();
    },
  );
  supervisor = new SignerSupervisor({
    converge: (signal) => lanes.converge(signal),
    clock,
    intervalMs: config.subSignerFundCheckIntervalMs,
    logger,
  });
  // Clock timers are unref'd and nothing else holds the process yet (the port is not
  // bound): this handle keeps it alive while the first pass waits for its txs.
  const keepAlive = setInterval(() => {}, 1_000);
  try {
    await supervisor.start();
  } finally {
    clearInterval(keepAlive);
  }
  logger.info(
    { lanes: lanes.view().map((l) => ({ address: l.address, state: l.state })) },
    "sub-signer lanes ready",
  );
  const s = supervisor;
  return { lanes: subs.length, subLanes: lanes, supervisor: s, stop: () => s.stop() };
}
