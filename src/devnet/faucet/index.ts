/**
 * The devnet's faucet: the `faucet` dev account's funds handed out over the CosmJS faucet's
 * HTTP API, through the node's own tx path. Started by `startDevnet` when a faucet port is
 * given; see ./server.ts (the API), ./sender.ts (signing and sequences), ./limits.ts.
 */
import { type Clock, systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import type { KeyAccount } from "../home.ts";
import type { DevnetNode } from "../node.ts";
import { defaultFaucetAmounts, type FaucetConfig } from "./config.ts";
import { CreditLimits } from "./limits.ts";
import { FaucetSender } from "./sender.ts";
import { type FaucetServer, startFaucetServer } from "./server.ts";

export {
  COSMJS_FAUCET_PORT,
  DEFAULT_FAUCET_COOLDOWN_MS,
  DEFAULT_FAUCET_CREDITS_PER_MINUTE,
  type FaucetConfig,
  faucetConfig,
  parseFaucetAmounts,
} from "./config.ts";

/** The dev account whose funds the faucet gives away. */
export const FAUCET_ACCOUNT = "faucet";

export interface FaucetStartOptions {
  node: DevnetNode;
  accounts: readonly KeyAccount[];
  config: FaucetConfig;
  /** The chain's PWR denom, offered by default beside the fee denom. */
  pwrDenom: string;
  nodeUrl: string;
  port: number;
  /** When `port` is taken, listen on a free one instead of failing (`fred up`). */
  anyPortIfBusy?: boolean;
  logger: Logger;
  clock?: Clock;
}

export async function startFaucet(opts: FaucetStartOptions): Promise<FaucetServer> {
  const account = opts.accounts.find((a) => a.name === FAUCET_ACCOUNT);
  if (account === undefined)
    throw new FredError(
      "ERR_DEVNET_CONFIG",
      `the devnet home has no "${FAUCET_ACCOUNT}" account to fund a faucet`,
    );
  const sender = new FaucetSender({
    node: opts.node,
    address: account.address,
    privateKey: Buffer.from(account.private_key_hex, "hex"),
  });
  const limits = new CreditLimits({
    cooldownMs: opts.config.cooldownMs,
    creditsPerMinute: opts.config.creditsPerMinute,
    clock: opts.clock ?? systemClock,
  });
  const amounts =
    opts.config.amounts ?? defaultFaucetAmounts(opts.node.app.config.minGasPrice.denom, opts.pwrDenom);
  const listen = (port: number) =>
    startFaucetServer({
      sender,
      amounts,
      cooldownMs: opts.config.cooldownMs,
      creditsPerMinute: opts.config.creditsPerMinute,
      limits,
      chainId: opts.node.chainId,
      bech32Prefix: opts.node.app.config.bech32Prefix,
      nodeUrl: opts.nodeUrl,
      logger: opts.logger,
      port,
    });
  try {
    return await listen(opts.port);
  } catch (err) {
    if (opts.anyPortIfBusy !== true || (err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
    return listen(0);
  }
}
