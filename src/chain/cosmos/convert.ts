/** Protobuf billing types → the Chain port's plain domain shapes. */

import { type ChainLease, type CoinAmount, LEASE_STATES, type LeaseStateName } from "../port.ts";
import { type Coin, type Lease, leaseStateName, type Timestamp } from "../proto/index.ts";

export function toDate(ts: Timestamp | undefined): Date | undefined {
  if (ts === undefined) return undefined;
  return new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6));
}

export function toCoins(coins: readonly Coin[]): CoinAmount[] {
  return coins.map((c) => ({ denom: c.denom, amount: c.amount }));
}

function stateName(state: number): LeaseStateName {
  const name = leaseStateName(state);
  return (LEASE_STATES as readonly string[]).includes(name)
    ? (name as LeaseStateName)
    : "LEASE_STATE_UNSPECIFIED";
}

export function stateNumber(name: LeaseStateName): number {
  return LEASE_STATES.indexOf(name);
}

export function toChainLease(l: Lease): ChainLease {
  return {
    uuid: l.uuid,
    tenant: l.tenant,
    providerUuid: l.providerUuid,
    state: stateName(l.state),
    items: l.items.map((i) => ({
      skuUuid: i.skuUuid,
      quantity: i.quantity,
      serviceName: i.serviceName,
      customDomain: i.customDomain,
      lockedPrice:
        i.lockedPrice === undefined
          ? undefined
          : { denom: i.lockedPrice.denom, amount: i.lockedPrice.amount },
    })),
    metaHash: Buffer.from(l.metaHash).toString("hex"),
    createdAt: toDate(l.createdAt),
    closedAt: toDate(l.closedAt),
    lastSettledAt: toDate(l.lastSettledAt),
    acknowledgedAt: toDate(l.acknowledgedAt),
    rejectedAt: toDate(l.rejectedAt),
    expiredAt: toDate(l.expiredAt),
    rejectionReason: l.rejectionReason,
    closureReason: l.closureReason,
  };
}

/** Sums coin lists per denom (amounts are decimal strings of arbitrary size). */
export function addCoins(into: Map<string, bigint>, coins: readonly Coin[]): void {
  for (const c of coins) into.set(c.denom, (into.get(c.denom) ?? 0n) + BigInt(c.amount || "0"));
}

export function coinsFromMap(map: Map<string, bigint>): CoinAmount[] {
  return [...map.entries()]
    .filter(([, v]) => v > 0n)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([denom, v]) => ({ denom, amount: v.toString() }));
}
