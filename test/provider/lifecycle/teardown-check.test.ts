import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LeaseStateName } from "../../../src/chain/port.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { FredError } from "../../../src/core/errors.ts";
import type { BackendClient } from "../../../src/provider/backend-client/index.ts";
import type { VerifiedCallback } from "../../../src/provider/lifecycle/index.ts";
import { checkTeardown } from "../../../src/provider/lifecycle/settle.ts";
import { RecordingChain } from "../../chain/recording-chain.ts";

/**
 * The evidence a `deprovisioned` report is checked against: the chain's exact re-read, then
 * the owner's own record. The backend is faked at its boundary (the one read it answers);
 * the end-to-end case is test/provider/e2e/lying-callback.test.ts.
 */
const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";

function owner(answer: () => Promise<{ status: string } | undefined>): {
  client: BackendClient;
  asked: () => number;
} {
  let asked = 0;
  const client = {
    provisionInfo: () => {
      asked++;
      return answer();
    },
  } as unknown as BackendClient;
  return { client, asked: () => asked };
}

function setup(state: LeaseStateName | undefined, answer: () => Promise<{ status: string } | undefined>) {
  const chain = new RecordingChain();
  const lease = chain.addLease(PROVIDER, { state: state ?? "LEASE_STATE_ACTIVE" });
  if (state === undefined) chain.leases.delete(lease.uuid);
  const o = owner(answer);
  const cb: VerifiedCallback = {
    backend: "one",
    leaseUuid: lease.uuid,
    capability: { kind: "lifecycle", id: "3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b" },
    status: "deprovisioned",
    error: "",
  };
  const clock = new ManualClock();
  const deps = { chain, clients: new Map([["one", o.client]]), clock };
  return { chain, cb, deps, clock, asked: o.asked };
}

const signal = new AbortController().signal;

describe("checkTeardown", () => {
  for (const state of ["LEASE_STATE_CLOSED", "LEASE_STATE_REJECTED", "LEASE_STATE_EXPIRED"] as const) {
    it(`${state}: the report stands, the backend is not asked`, async () => {
      const t = setup(state, async () => ({ status: "ready" }));
      assert.equal(await checkTeardown(t.deps, t.cb, signal), "ended");
      assert.equal(t.asked(), 0);
    });
  }

  const table: [string, () => Promise<{ status: string } | undefined>, string][] = [
    ["ready", async () => ({ status: "ready" }), "running"],
    ["restarting", async () => ({ status: "restarting" }), "running"],
    ["not found (404)", async () => undefined, "lost"],
    ["failed", async () => ({ status: "failed" }), "lost"],
    ["an unknown status", async () => ({ status: "zzz" }), "lost"],
  ];
  for (const [what, answer, expected] of table) {
    it(`ACTIVE and the owner reports ${what}: ${expected}`, async () => {
      const t = setup("LEASE_STATE_ACTIVE", answer);
      assert.equal(await checkTeardown(t.deps, t.cb, signal), expected);
      assert.equal(t.asked(), 1);
    });
  }

  it("bad input: a lease the chain does not know, or an unconfigured owner, is unknown", async () => {
    const gone = setup(undefined, async () => ({ status: "ready" }));
    assert.equal(await checkTeardown(gone.deps, gone.cb, signal), "unknown");
    const t = setup("LEASE_STATE_ACTIVE", async () => ({ status: "ready" }));
    assert.equal(await checkTeardown(t.deps, { ...t.cb, backend: "nobody" }, signal), "unknown");
    const odd = setup("LEASE_STATE_UNSPECIFIED", async () => ({ status: "ready" }));
    assert.equal(await checkTeardown(odd.deps, odd.cb, signal), "unknown");
  });

  it("bad input: a failing backend or chain read throws (nothing is decided)", async () => {
    const t = setup("LEASE_STATE_ACTIVE", () =>
      Promise.reject(new FredError("ERR_BACKEND_MALFORMED", "malformed")),
    );
    await assert.rejects(checkTeardown(t.deps, t.cb, signal), { code: "ERR_BACKEND_MALFORMED" });
    const c = setup("LEASE_STATE_ACTIVE", async () => ({ status: "ready" }));
    c.chain.getLease = () => Promise.reject(new FredError("ERR_CHAIN_UNAVAILABLE", "down"));
    await assert.rejects(checkTeardown(c.deps, c.cb, signal), { code: "ERR_CHAIN_UNAVAILABLE" });
  });

  it("bad input: a backend that never answers times out within the budget", async () => {
    const t = setup("LEASE_STATE_ACTIVE", () => new Promise(() => {}));
    const check = checkTeardown(t.deps, t.cb, signal, 1_000);
    await new Promise((r) => setImmediate(r));
    t.clock.advance(1_000);
    await assert.rejects(check, { code: "ERR_BACKEND_TIMEOUT" });
  });
});
