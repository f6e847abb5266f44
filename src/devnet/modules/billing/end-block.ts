/** EndBlock: expire PENDING leases past created_at + pending_timeout, oldest first, ≤ 100 per block. */
import { LeaseState } from "../../../chain/proto/index.ts";
import { type PendingRef, selectExpired } from "../../economics/expiry.ts";
import type { ExecContext } from "../../module.ts";
import { ev } from "./handler.ts";
import { AccountCache, nowNs, nowTs, terminate } from "./ledger.ts";
import { BILLING, bkeys, getLease, getParams } from "./store.ts";

/**
 * PENDING leases oldest first. A lease UUID is a UUIDv7 whose first 48 bits are its creation
 * block time in ms, so the PENDING state index in UUID order is creation order and the
 * creation time can be read off the key without loading the lease.
 */
function* pendingOldestFirst(ctx: ExecContext): Generator<PendingRef> {
  const prefix = bkeys.byState(LeaseState.LEASE_STATE_PENDING);
  for (const [key] of ctx.store(BILLING).iterate({ prefix })) {
    const uuid = key.slice(prefix.length);
    const ms = Number.parseInt(uuid.slice(0, 8) + uuid.slice(9, 13), 16);
    yield { uuid, createdNs: BigInt(ms) * 1_000_000n };
  }
}

export function expirePending(ctx: ExecContext): void {
  const params = getParams(ctx);
  const expired = selectExpired(pendingOldestFirst(ctx), nowNs(ctx), params.pendingTimeout);
  if (expired.length === 0) return;
  const cache = new AccountCache(ctx);
  const at = nowTs(ctx);
  for (const uuid of expired) {
    const lease = getLease(ctx, uuid);
    if (lease === undefined || lease.state !== LeaseState.LEASE_STATE_PENDING) continue;
    const account = cache.mustGet(lease.tenant);
    terminate(ctx, lease, account, LeaseState.LEASE_STATE_EXPIRED, (x) => {
      x.expiredAt = at;
    });
    cache.touch(account);
    ctx.emit(
      ev("lease_expired", {
        lease_uuid: lease.uuid,
        tenant: lease.tenant,
        provider_uuid: lease.providerUuid,
        reason: "pending_timeout",
      }),
    );
  }
  cache.flush();
}
