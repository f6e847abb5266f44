import { once } from "node:events";
import { StargateClient } from "@cosmjs/stargate";
import type { CosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import type {
  BillingDeps,
  BillingScheduler,
  BillingSchedulerEvents,
} from "../../../src/provider/billing/index.ts";
import { clientFor } from "../../chain/devnet/helpers.ts";
import type { Devnet } from "../../support/index.ts";

/**
 * Shared pieces of the billing tests: a real devnet process (the chain), real chain
 * clients for the provider and a tenant, and a ManualClock that drives the billing
 * scheduler (the chain's own time moves with devnet_advance_time).
 */
export const quiet = createLogger("billing-test", process.env.E2E_LOG_LEVEL ?? "silent");

export function manualClock(): ManualClock {
  return new ManualClock(Date.UTC(2026, 0, 1));
}

/** The billing keys of a provider config, at the reference's defaults unless given. */
export function billingConfig(
  providerUuid: string,
  over: Partial<Omit<BillingDeps["config"], "providerUuid">> = {},
) {
  return {
    providerUuid,
    withdrawIntervalMs: 3_600_000,
    creditCheckIntervalMs: 0,
    creditCheckErrorThreshold: 3,
    creditCheckRetryIntervalMs: 30_000,
    creditCheckZeroGracePeriodMs: 300_000,
    ...over,
  };
}

/** A block's header time in nanoseconds since the epoch (RFC 3339 with up to 9 digits). */
export async function blockTimeNs(rpc: string, height: number): Promise<bigint> {
  const res = (await (await fetch(`${rpc}/block?height=${height}`)).json()) as {
    result: { block: { header: { time: string } } };
  };
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$/.exec(res.result.block.header.time);
  if (m === null) throw new Error(`unexpected block time ${res.result.block.header.time}`);
  const whole = BigInt(Date.parse(`${m[1]}Z`)) * 1_000_000n;
  return whole + BigInt((m[2] ?? "").padEnd(9, "0"));
}

export async function bankBalance(rpc: string, address: string, denom: string): Promise<bigint> {
  const client = await StargateClient.connect(rpc);
  try {
    return BigInt((await client.getBalance(address, denom)).amount);
  } finally {
    client.disconnect();
  }
}

/** The next event of the scheduler, after `act` (which usually advances the clock). */
export async function next<K extends keyof BillingSchedulerEvents>(
  s: BillingScheduler,
  event: K,
  act: () => void = () => {},
): Promise<BillingSchedulerEvents[K]> {
  const p = once(s, event) as Promise<BillingSchedulerEvents[K]>;
  act();
  return p;
}

export async function providerClient(
  dn: Devnet,
  opts: { withdrawLimit?: number; maxWithdrawIterations?: number } = {},
): Promise<CosmosChain> {
  return clientFor(dn, "provider", opts);
}
