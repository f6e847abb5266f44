import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type CreditAccount, type Lease, LeaseState } from "../../../../src/chain/proto/billing-types.ts";
import type { Coins } from "../../../../src/devnet/coins.ts";
import { deriveCreditAddress } from "../../../../src/devnet/economics/credit-address.ts";
import {
  checkLedger,
  checkTransition,
  type LedgerSnapshot,
} from "../../../../src/devnet/economics/invariants.ts";

const tenant = "manifest1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc57qwfj5";
const credit = deriveCreditAddress(tenant);
const provider = "0190d4a0-0000-7000-8000-0000000000aa";
const sku = "0190d4a0-0000-7000-8000-0000000000bb";
const t = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

function lease(uuid: string, state: number, over: Partial<Lease> = {}): Lease {
  return {
    uuid,
    tenant,
    providerUuid: provider,
    items: [
      {
        skuUuid: sku,
        quantity: 1n,
        lockedPrice: { denom: "upwr", amount: "1000" },
        serviceName: "",
        customDomain: "",
      },
    ],
    state,
    createdAt: t(1000),
    closedAt: undefined,
    lastSettledAt: t(1000),
    acknowledgedAt: undefined,
    rejectedAt: undefined,
    rejectionReason: "",
    expiredAt: undefined,
    closureReason: "",
    metaHash: new Uint8Array(),
    minLeaseDurationAtCreation: 3600n,
    reservation: { remainingAmounts: [{ denom: "upwr", amount: "3600000" }] },
    ...over,
  };
}

function snapshot(
  leases: Lease[],
  account: Partial<CreditAccount> = {},
  balance = 10_000_000n,
): LedgerSnapshot {
  const acc: CreditAccount = {
    tenant,
    creditAddress: credit,
    activeLeaseCount: 1n,
    pendingLeaseCount: 1n,
    reservedAmounts: [{ denom: "upwr", amount: "7200000" }],
    unattributedReservedAmounts: [],
    unattributedLeaseCount: 0n,
    ...account,
  };
  return {
    blockNs: 2000n * 1_000_000_000n,
    pendingTimeoutSeconds: 1800n,
    leases,
    accounts: [acc],
    balanceOf: (a): Coins => new Map(a === credit ? [["upwr", balance]] : []),
    domains: new Map(),
    skuProvider: new Map([[sku, provider]]),
    leaseSequence: BigInt(leases.length),
  };
}

const pending = lease("0190d4a0-0000-7000-8000-000000000001", LeaseState.LEASE_STATE_PENDING);
const active = lease("0190d4a0-0000-7001-8000-000000000002", LeaseState.LEASE_STATE_ACTIVE, {
  acknowledgedAt: t(1100),
  lastSettledAt: t(1500),
});

describe("ledger invariants", () => {
  it("accept a consistent ledger", () => {
    assert.deepEqual(checkLedger(snapshot([pending, active])), []);
  });
  it("catch counter, reservation, balance and address drift", () => {
    const v = checkLedger(
      snapshot([pending, active], { pendingLeaseCount: 2n, reservedAmounts: [], creditAddress: tenant }, 1n),
    );
    assert.ok(
      v.some((x) => x.includes("pending_lease_count 2 != 1")),
      v.join("\n"),
    );
    assert.ok(
      v.some((x) => x.includes("reserved  != tranches 7200000upwr")),
      v.join("\n"),
    );
    assert.ok(
      v.some((x) => x.includes("not the derived one")),
      v.join("\n"),
    );
  });
  it("catch balance below reservations and overdue pending leases", () => {
    const v = checkLedger({ ...snapshot([pending, active], {}, 5n), blockNs: 4000n * 1_000_000_000n });
    assert.ok(v.some((x) => x.includes("balance below reserved upwr")));
    assert.ok(v.some((x) => x.includes("PENDING leases past their deadline")));
  });
  it("catch a CLOSED lease whose settlement does not end at closed_at", () => {
    const closed = lease("0190d4a0-0000-7002-8000-000000000003", LeaseState.LEASE_STATE_CLOSED, {
      closedAt: t(1900),
      lastSettledAt: t(1800),
      reservation: { remainingAmounts: [] },
    });
    assert.ok(
      checkLedger(snapshot([pending, active, closed])).some((x) =>
        x.includes("last_settled_at != closed_at"),
      ),
    );
  });
  it("catch illegal transitions and mutated immutable fields", () => {
    const before = snapshot([pending, active]);
    const back = lease(active.uuid, LeaseState.LEASE_STATE_PENDING, { quantity: 1n } as never);
    const v = checkTransition(before, snapshot([{ ...pending, tenant: "x" }, back]));
    assert.ok(
      v.some((x) => x.includes("illegal transition 2→1")),
      v.join("\n"),
    );
    assert.ok(
      v.some((x) => x.includes("immutable fields changed")),
      v.join("\n"),
    );
    assert.deepEqual(checkTransition(before, before), []);
  });
});
