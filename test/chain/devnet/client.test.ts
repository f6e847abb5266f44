import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { type Clock, systemClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { type Devnet, devnet, runFred, until } from "../../support/index.ts";
import { advanceTime, clientFor, createLeases } from "./helpers.ts";

/** The system clock, except that 0 ms timers fire before any I/O can answer (a node that is always too slow). */
function zeroDelayFirstClock(): Clock {
  const clock: Clock = {
    now: () => Date.now(),
    setTimer(ms, fn) {
      if (ms > 0) return systemClock.setTimer(ms, fn);
      let cancelled = false;
      queueMicrotask(() => {
        if (!cancelled) fn();
      });
      return () => {
        cancelled = true;
      };
    },
    sleep: (ms, signal) => systemClock.sleep(ms, signal),
  };
  return clock;
}

describe("chain client against a real devnet", () => {
  let dn: Devnet;
  let provider: CosmosChain;
  let tenant1: CosmosChain;
  let tenant2: CosmosChain;
  before(async () => {
    dn = await devnet({ blockTime: "200ms", tenants: 2 });
    provider = await clientFor(dn, "provider", { queryPageLimit: 2, withdrawLimit: 2 });
    tenant1 = await clientFor(dn, "tenant1");
    tenant2 = await clientFor(dn, "tenant2");
  });
  after(async () => {
    for (const c of [provider, tenant1, tenant2]) c?.disconnect();
    await dn?.stop();
  });

  it("queries: lease by UUID (typed not-found), leases by provider across pages, credit, height", async () => {
    const created = await createLeases(tenant1, dn, 5);
    assert.equal(created.length, 5);
    const lease = await provider.getLease(created[0] as string);
    assert.equal(lease?.state, "LEASE_STATE_PENDING");
    assert.equal(lease?.tenant, tenant1.address);
    assert.equal(lease?.providerUuid, dn.keys.provider_uuid);
    assert.equal(lease?.items[0]?.lockedPrice?.amount, "100");
    assert.equal(await provider.getLease("01a22a2c-bb6b-7001-8d68-000000000000"), undefined);
    await assert.rejects(provider.getLease("not-a-uuid"), (e) => isFredError(e, "ERR_INVALID_ARGUMENT"));
    // Page size 2 → three pages for five leases; all of them come back, in UUID order.
    const pending = await provider.leasesByProvider(dn.keys.provider_uuid, "LEASE_STATE_PENDING");
    assert.deepEqual(
      pending.map((l) => l.uuid),
      [...created].sort(),
    );
    assert.deepEqual(await provider.leasesByProvider("01a22a2c-bb6b-7001-8d68-000000000000", undefined), []);
    const credit = await provider.creditAccount(tenant1.address);
    assert.equal(credit?.pendingLeaseCount, 5n);
    assert.ok(credit?.balances.some((b) => b.denom === "upwr"));
    assert.equal(await provider.creditAccount(dn.account("faucet").address), undefined);
    const block = await provider.latestBlock();
    assert.ok(block.height > 1 && block.time instanceof Date);
  });

  it("acknowledge: per-lease outcomes (already ACTIVE is a success, bad input fails alone)", async () => {
    const [a, b, c] = await createLeases(tenant2, dn, 3);
    const first = await provider.acknowledge([a as string]);
    assert.equal(first[0]?.status, "acknowledged");
    const mixed = await provider.acknowledge([a as string, b as string, "nope", c as string]);
    assert.deepEqual(
      mixed.map((o) => o.status),
      ["already_done", "acknowledged", "failed", "acknowledged"],
    );
    assert.ok(isFredError(mixed[2]?.error, "ERR_INVALID_ARGUMENT"));
    assert.equal((await provider.getLease(b as string))?.state, "LEASE_STATE_ACTIVE");
    // A tenant key cannot acknowledge: the chain refuses in the block (billing code 6), all fail.
    const [d] = await createLeases(tenant2, dn, 1);
    const refused = await tenant2.acknowledge([d as string]);
    assert.equal(refused[0]?.status, "failed");
    assert.ok(isFredError(refused[0]?.error, "ERR_TX_FAILED"));
    assert.equal(refused[0]?.error?.details?.codespace, "billing");
    assert.equal(refused[0]?.error?.details?.code, 6);
    assert.equal((await provider.getLease(d as string))?.state, "LEASE_STATE_PENDING");
  });

  it("reject sanitises the reason; close ACTIVE leases; closing a non-ACTIVE lease fails typed", async () => {
    const pendings = await provider.leasesByProvider(dn.keys.provider_uuid, "LEASE_STATE_PENDING");
    const victim = pendings[0]?.uuid as string;
    const reason = `bad\u0007 manifest ${"é".repeat(200)}`;
    const out = await provider.reject([victim], reason);
    assert.equal(out[0]?.status, "rejected");
    const stored = (await provider.getLease(victim))?.rejectionReason ?? "";
    assert.ok(!stored.includes("\u0007"));
    assert.ok(Buffer.byteLength(stored) <= 256 && stored.endsWith("..."));
    const active = await provider.leasesByProvider(dn.keys.provider_uuid, "LEASE_STATE_ACTIVE");
    const closeOut = await provider.closeLeases(
      [active[0]?.uuid as string, victim],
      "provision failed 3 times",
    );
    assert.deepEqual(
      closeOut.map((o) => o.status),
      ["closed", "failed"],
    );
    assert.ok(isFredError(closeOut[1]?.error, "ERR_LEASE_NOT_ACTIVE"));
    assert.equal(
      (await provider.getLease(active[0]?.uuid as string))?.closureReason,
      "provision failed 3 times",
    );
  });

  it("withdraw: specific leases and provider-wide with the next_key cursor across pages", async () => {
    const more = await createLeases(tenant1, dn, 3);
    const acked = await provider.acknowledge(more);
    assert.ok(acked.every((o) => o.status === "acknowledged"));
    await advanceTime(dn, provider, 60);
    const view = await provider.providerWithdrawable(dn.keys.provider_uuid);
    assert.ok(
      view.leaseCount >= 3n,
      JSON.stringify(view, (_k, v) => (typeof v === "bigint" ? String(v) : v)),
    );
    const specific = await provider.withdrawLeases([more[0] as string]);
    assert.equal(specific[0]?.withdrawalCount, 1n);
    assert.equal(specific[0]?.amounts[0]?.denom, "upwr");
    await advanceTime(dn, provider, 60);
    // withdraw_limit 2 and ≥ 4 ACTIVE leases → at least two pages threaded by next_key.
    const all = await provider.withdrawAll(dn.keys.provider_uuid);
    assert.ok(all.pages.length >= 2, `pages: ${all.pages.length}`);
    assert.equal(all.truncated, false);
    assert.ok(all.pages.slice(0, -1).every((p) => p.hasMore && p.nextKey.length > 0));
    assert.equal(all.pages.at(-1)?.nextKey.length, 0);
    await assert.rejects(provider.withdrawLeases(["x"]), (e) => isFredError(e, "ERR_INVALID_ARGUMENT"));
  });

  it("fees: too low a gas price is refused at CheckTx and consumes no sequence", async () => {
    const cheap = await clientFor(dn, "tenant1", { gas: { gasPrice: 1 } });
    try {
      const [l] = await createLeases(tenant1, dn, 1);
      await assert.rejects(
        cheap.send([]),
        (e) => isFredError(e, "ERR_TX_INSUFFICIENT_FEE") || isFredError(e, "ERR_TX_REJECTED"),
      );
      const before = cheap.pipeline?.owner.cached?.sequence;
      await assert.rejects(
        cheap.send([
          {
            typeUrl: "/liftedinit.billing.v1.MsgCancelLease",
            value: { tenant: cheap.address, leaseUuids: [l] },
          },
        ]),
        (e) => isFredError(e, "ERR_TX_INSUFFICIENT_FEE"),
      );
      assert.equal(cheap.pipeline?.owner.cached?.sequence, before);
      assert.equal((await provider.getLease(l as string))?.state, "LEASE_STATE_PENDING");
    } finally {
      cheap.disconnect();
    }
  });

  it("gas: simulation failure falls back to gas_limit × adjustment; above max_gas_limit is never sent", async () => {
    // A simulation that cannot answer within its deadline counts as failed.
    const fallback = await clientFor(dn, "tenant2", {
      gas: { gasLimit: 400_000, gasAdjustment: 1.5 },
      simulateTimeoutMs: 0,
      clock: zeroDelayFirstClock(),
    });
    const capped = await clientFor(dn, "tenant2", { gas: { gasLimit: 1000, maxGasLimit: 1000 } });
    try {
      const [l] = await createLeases(tenant2, dn, 1);
      const cancel = {
        typeUrl: "/liftedinit.billing.v1.MsgCancelLease",
        value: { tenant: capped.address, leaseUuids: [l] },
      };
      const sent = await capped.send([cancel]).catch((e: unknown) => e);
      assert.ok(isFredError(sent, "ERR_TX_GAS_ABOVE_MAX"), String(sent));
      assert.equal(capped.pipeline?.metrics.broadcasts, 0);
      const res = await fallback.send([
        {
          typeUrl: "/liftedinit.billing.v1.MsgCancelLease",
          value: { tenant: fallback.address, leaseUuids: [l] },
        },
      ]);
      assert.equal(res.code, 0);
      assert.equal(res.gasSource, "fallback");
      assert.equal(res.gasWanted, 600_000);
      assert.equal(res.fee, 15n);
      assert.equal(fallback.pipeline?.metrics.simulationFailures, 1);
    } finally {
      fallback.disconnect();
      capped.disconnect();
    }
  });

  it("gas: a too-small fallback climbs the out-of-gas ladder (× 1.5) until the tx fits", async () => {
    const low = await clientFor(dn, "tenant1", {
      gas: { gasLimit: 60_000, gasAdjustment: 1 },
      simulateTimeoutMs: 0,
      clock: zeroDelayFirstClock(),
    });
    try {
      const [l] = await createLeases(tenant1, dn, 1);
      const res = await low.send([
        { typeUrl: "/liftedinit.billing.v1.MsgCancelLease", value: { tenant: low.address, leaseUuids: [l] } },
      ]);
      assert.equal(res.code, 0);
      assert.equal(res.gasSource, "retry");
      assert.ok([90_000, 135_000].includes(res.gasWanted), `gas wanted ${res.gasWanted}`);
      assert.ok((low.pipeline?.metrics.outcomes.get("out_of_gas_retry") ?? 0) >= 1);
    } finally {
      low.disconnect();
    }
  });

  it("two processes racing one key: both recover from sequence mismatches", async () => {
    const tenant = dn.account("tenant1").address;
    // With block production paused both processes read the same committed sequence, so
    // one of them must be refused at CheckTx and re-sign with the sequence it is told.
    await dn.call("devnet_pause");
    try {
      let exited = 0;
      // The two amounts differ so the two txs do too: identical messages signed at the same
      // sequence are one tx byte for byte (deterministic signatures), and the second
      // broadcast would only find the first in the mempool, not be refused for its sequence.
      const runs = Promise.all(
        ["1000umfx", "1001umfx"].map((amount) =>
          runFred([
            "chain",
            "credit",
            "fund",
            "--tenant",
            tenant,
            "--amount",
            amount,
            "--from",
            "faucet",
            "--home",
            dn.home,
            "--rpc",
            dn.rpc,
            // The first tx waits in the paused mempool until the second process has started;
            // on a loaded machine that can take longer than the default 30 s.
            "--tx-timeout",
            "180s",
          ]).finally(() => {
            exited++;
          }),
        ),
      );
      // Both txs wait in the mempool; stop waiting early if a process gave up, so its
      // stderr is reported below instead of a bare timeout.
      await until(
        async () => {
          const r = (await dn.call("num_unconfirmed_txs")) as { n_txs: string };
          return r.n_txs === "2" || exited > 0;
        },
        "two txs in the mempool",
        90_000,
      );
      await dn.call("devnet_resume");
      const done = await runs;
      for (const r of done) assert.equal(r.code, 0, r.stderr);
      assert.equal(new Set(done.map((r) => JSON.parse(r.stdout).tx_hash)).size, 2);
      assert.ok(
        done.filter((r) => /sequence mismatch/.test(r.stderr)).length >= 1,
        "the later process had to re-sign",
      );
    } finally {
      await dn.call("devnet_resume");
    }
  });

  it("tx never included → ERR_TX_TIMEOUT with its hash, sent once; it lands once blocks resume", async () => {
    const impatient = await clientFor(dn, "tenant2", { txTimeoutMs: 1500 });
    try {
      const [l] = await createLeases(tenant2, dn, 1);
      await dn.call("devnet_pause");
      const err = await impatient
        .send([
          {
            typeUrl: "/liftedinit.billing.v1.MsgCancelLease",
            value: { tenant: impatient.address, leaseUuids: [l] },
          },
        ])
        .catch((e: unknown) => e);
      assert.ok(isFredError(err, "ERR_TX_TIMEOUT"), String(err));
      assert.match(String(err.details?.tx_hash), /^[0-9A-F]{64}$/);
      assert.equal(impatient.pipeline?.metrics.broadcasts, 1);
      await dn.call("devnet_resume");
      await until(
        async () => (await provider.getLease(l as string))?.state === "LEASE_STATE_REJECTED",
        "cancel included",
      );
    } finally {
      await dn.call("devnet_resume").catch(() => {});
      impatient.disconnect();
    }
  });
});
