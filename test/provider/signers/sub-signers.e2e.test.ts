import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MsgRevoke } from "cosmjs-types/cosmos/authz/v1beta1/tx";
import { cosmosHdPath, privateKeyFromMnemonic } from "../../../src/auth/keys.ts";
import { type CosmosChain, openCosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { connectNode, type NodeConnection } from "../../../src/chain/cosmos/rpc.ts";
import { buildSignedTx, signerFromKey, type TxSigner } from "../../../src/chain/cosmos/signer.ts";
import {
  balanceOf,
  deriveSubSigners,
  LEASE_MSG_TYPE_URLS,
  missingLeaseGrants,
  sendMsg,
} from "../../../src/chain/cosmos/sub-signers.ts";
import { txMessages } from "../../../src/chain/cosmos/tx-messages.ts";
import { MsgAcknowledgeLease } from "../../../src/chain/proto/index.ts";
import { runFred, until } from "../../support/index.ts";
import { sample } from "../../support/metrics.ts";
import { mockSkus, Stack } from "../e2e/stack.ts";
import { RpcProxy } from "./rpc-proxy.ts";

/**
 * providerd with `sub_signer_count: 3` against a fresh devnet (as a process), a mock
 * backend and an RPC proxy that can fail the authz grant reads. The fund check interval is
 * 1 h: every re-check below is one a lane fault triggered, not the timer.
 */
const stack = new Stack();
const proxy = new RpcProxy();
const GRANTS = "/cosmos.authz.v1beta1.Query/Grants";
const MIN = 10_000_000n;
let subs: TxSigner[];
let conn: NodeConnection;
let provider: CosmosChain;
let mnemonic: string;

before(async () => {
  await proxy.start();
  await stack.start(
    (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")) }],
    (s) => {
      proxy.target = s.devnet.rpc;
      s.extraConfig = {
        sub_signer_count: 3,
        sub_signer_fund_check_interval: "1h",
        sub_signer_min_balance: `${MIN}umfx`,
        sub_signer_top_up_amount: "50000000umfx",
        rpc_url: proxy.url,
      };
    },
  );
  mnemonic = stack.account("provider").mnemonic;
  subs = deriveSubSigners(mnemonic, 3);
  conn = await connectNode(stack.devnet.rpc);
  provider = await openCosmosChain({
    rpcUrl: stack.devnet.rpc,
    signer: signerFromKey(privateKeyFromMnemonic(mnemonic)),
    txPollIntervalMs: 50,
    txTimeoutMs: 20_000,
  });
});

after(async () => {
  provider?.disconnect();
  conn?.close();
  await stack.close();
  await proxy.close();
});

interface TxEvent {
  type: string;
  attributes: { key: string; value: string }[];
}
interface RpcResults {
  tx_search: { txs: { tx_result: { code: number; events: TxEvent[] } }[] };
  broadcast_tx_commit: { check_tx: { code: number }; tx_result?: { code: number } };
}

async function rpc<M extends keyof RpcResults>(
  method: M,
  params: Record<string, unknown>,
): Promise<RpcResults[M]> {
  const res = await fetch(stack.devnet.rpc, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: unknown };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result as RpcResults[M];
}

/** Who signed the tx that acknowledged `lease`, from the chain's tx index. */
async function ackSigner(lease: string): Promise<string> {
  const found = await rpc("tx_search", {
    query: `lease_acknowledged.lease_uuid='${lease}'`,
    prove: false,
    page: "1",
    per_page: "10",
    order_by: "asc",
  });
  const ok = found.txs.filter((t) => t.tx_result.code === 0);
  assert.equal(ok.length, 1, `one successful ack tx for ${lease}`);
  const events = ok[0]?.tx_result.events ?? [];
  const accSeq = events
    .flatMap((e) => (e.type === "tx" ? e.attributes : []))
    .find((a) => a.key === "acc_seq");
  assert.ok(accSeq !== undefined, "the tx names its signer");
  return accSeq.value.split("/")[0] as string;
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${stack.api}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  // A labelled series appears once it has a value: absent means none yet.
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

/** One lease, created and awaited ACTIVE (one ack batch each: the batcher rotates lanes). */
async function ackedLease(): Promise<string> {
  const [lease] = await stack.createLeases(1, "docker-small");
  await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
  return lease!;
}

async function grantsComplete(): Promise<boolean> {
  for (const s of subs)
    if ((await missingLeaseGrants(conn, stack.account("provider").address, s.address)).length > 0)
      return false;
  return true;
}

/** Empties a sub-signer's balance with a tx it signs itself (fixed gas, so the fee is known). */
async function drain(index: number): Promise<void> {
  const signer = signerFromKey(privateKeyFromMnemonic(mnemonic, cosmosHdPath(index + 1)));
  const own = await openCosmosChain({ rpcUrl: stack.devnet.rpc, signer });
  try {
    const account = await own.pipeline!.owner.exclusive(async (a) => ({ value: a, consumed: false }));
    const fee = 5n; // 200,000 gas × the devnet's 0.000025umfx minimum
    const balance = await balanceOf(conn, signer.address, "umfx");
    const tx = buildSignedTx({
      registry: txMessages,
      signer,
      chainId: stack.keys.chain_id,
      accountNumber: account.accountNumber,
      sequence: account.sequence,
      messages: [
        sendMsg(signer.address, stack.account("faucet").address, { denom: "umfx", amount: balance - fee }),
      ],
      gas: 200_000,
      fee: { denom: "umfx", amount: fee.toString() },
    });
    const res = await rpc("broadcast_tx_commit", { tx: Buffer.from(tx).toString("base64") });
    assert.equal(res.tx_result?.code ?? res.check_tx.code, 0, JSON.stringify(res));
    assert.equal(await balanceOf(conn, signer.address, "umfx"), 0n);
  } finally {
    own.disconnect();
  }
}

/** All three lanes active again, and the next acknowledgement goes out on one of them. */
async function lanesServeAgain(): Promise<void> {
  await until(async () => (await metric('fred_signer_lanes{state="active"}')) === 3, "3 lanes active again");
  assert.ok(
    subs.map((s) => s.address).includes(await ackSigner(await ackedLease())),
    "a sub-signer acks again",
  );
}

async function revokeAckGrants(): Promise<void> {
  await provider.send(
    subs.map((s) => ({
      typeUrl: "/cosmos.authz.v1beta1.MsgRevoke",
      value: MsgRevoke.fromPartial({
        granter: provider.address,
        grantee: s.address,
        msgTypeUrl: MsgAcknowledgeLease.typeUrl,
      }),
    })),
  );
}

describe("providerd with authz sub-signer lanes (devnet + mock backend + providerd)", () => {
  it("refuses to start without FRED_MNEMONIC, or with a mnemonic that is not the provider key's", async () => {
    const granter = stack.account("provider").address;
    const none = await runFred(["providerd", "-c", stack.configPath], { env: { FRED_LOG_LEVEL: "error" } });
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /sub_signer_count is 3: set FRED_MNEMONIC to the provider key's mnemonic/);
    const other = await runFred(["providerd", "-c", stack.configPath], {
      env: { FRED_LOG_LEVEL: "error", FRED_MNEMONIC: stack.account("tenant1").mnemonic },
    });
    assert.notEqual(other.code, 0);
    assert.match(
      other.stderr,
      new RegExp(
        `FRED_MNEMONIC is not the provider key's mnemonic: its account 0 .* is ${stack.account("tenant1").address}, but provider_address is ${granter}`,
      ),
    );
    // Nothing was sent: the chain is still fresh.
    for (const s of subs)
      assert.deepEqual(await missingLeaseGrants(conn, granter, s.address), [...LEASE_MSG_TYPE_URLS]);
  });

  it("creates the grants and funds the lanes on a fresh chain before serving", async () => {
    for (const s of subs) assert.equal(await balanceOf(conn, s.address, "umfx"), 0n);
    await stack.startProviderd({ FRED_MNEMONIC: mnemonic });
    assert.ok(await grantsComplete(), "every sub-signer holds the three lease grants");
    for (const s of subs) assert.equal(await balanceOf(conn, s.address, "umfx"), 50_000_000n);
    assert.equal(await metric('fred_signer_lanes{state="active"}'), 3);
    assert.equal(await metric("fred_signer_grants_created_total"), 9);
  });

  it("spreads acknowledgements over the lanes (the signers of the ack txs on chain)", async () => {
    const signers: string[] = [];
    for (let i = 0; i < 6; i++) signers.push(await ackSigner(await ackedLease()));
    const lanes = subs.map((s) => s.address);
    for (const s of signers) assert.ok(lanes.includes(s), `${s} is a sub-signer, not the provider key`);
    assert.equal(new Set(signers).size, 3, `all three lanes signed: ${signers.join(", ")}`);
    // Sent as authz MsgExec, still counted as acknowledgements (the last one once its
    // sender has seen it included, which may be after the lease shows ACTIVE).
    await until(async () => {
      const text = await (await fetch(`${stack.api}/metrics`)).text();
      return (
        (sample(text, "fred_chain_transactions_total", { type: "acknowledge", outcome: "success" }) ?? 0) >= 6
      );
    }, "six acknowledge txs counted");
  });

  it("re-creates a revoked grant after the grant error, and the lease is acknowledged anyway", async () => {
    await revokeAckGrants();
    assert.equal(await grantsComplete(), false);
    const restarts = await metric("fred_signer_restarts_total");
    const lease = await ackedLease();
    // The lane's MsgExec failed on the missing grant: the provider key sent the ack itself.
    assert.equal(await ackSigner(lease), provider.address);
    await until(grantsComplete, "grants re-created by the pass the fault triggered", {
      context: () => stack.providerd?.logTail() ?? "",
    });
    await until(
      async () => (await metric('fred_signer_lanes{state="active"}')) === 3,
      "3 lanes active again",
    );
    assert.equal(await metric("fred_signer_restarts_total"), restarts + 1);
    assert.equal(await metric("fred_signer_demotions_total"), 0);
  });

  it("tops up a lane whose funds ran out", async () => {
    for (const i of [0, 1, 2]) await drain(i);
    const lease = await ackedLease();
    assert.equal(
      await ackSigner(lease),
      provider.address,
      "the drained lane's batch went out on the provider key",
    );
    await until(
      async () => {
        for (const s of subs) if ((await balanceOf(conn, s.address, "umfx")) < MIN) return false;
        return true;
      },
      "every lane topped up above sub_signer_min_balance",
      { context: () => stack.providerd?.logTail() ?? "" },
    );
    await lanesServeAgain();
  });

  it("a failed grant read demotes nothing; the lane comes back once reads do", async () => {
    await revokeAckGrants();
    proxy.failing.add(GRANTS);
    const passes = await metric('fred_signer_checks_total{outcome="unsettled"}');
    const lease = await ackedLease();
    assert.equal(await ackSigner(lease), provider.address);
    // Two passes that could not read the grants (the fault's, and its backoff retry).
    await until(
      async () => (await metric('fred_signer_checks_total{outcome="unsettled"}')) >= passes + 2,
      "two unsettled passes",
      { context: () => stack.providerd?.logTail() ?? "" },
    );
    assert.ok((proxy.failed.get(GRANTS) ?? 0) > 0, "providerd's grant reads did fail");
    assert.equal(await metric("fred_signer_demotions_total"), 0);
    assert.equal(await metric('fred_signer_lanes{state="demoted"}'), 0);
    assert.equal(await grantsComplete(), false, "nothing was granted on a read that failed");
    proxy.failing.clear();
    await until(grantsComplete, "grants re-created once the reads answer", {
      context: () => stack.providerd?.logTail() ?? "",
    });
    await until(
      async () => (await metric('fred_signer_lanes{state="active"}')) === 3,
      "3 lanes active again",
    );
    assert.equal(await metric("fred_signer_demotions_total"), 0);
  });

  it("demotes a lane only when its grant is missing and the grant tx is refused; a later pass restores it", async () => {
    const demotions = await metric("fred_signer_demotions_total");
    await revokeAckGrants();
    proxy.refuseTxsWith = "/cosmos.authz.v1beta1.MsgGrant";
    const lease = await ackedLease();
    assert.equal(await ackSigner(lease), provider.address);
    // The faulted lane's pass read "missing" and its MsgGrant was refused: that lane is
    // demoted; lanes still active keep serving until their own txs fail.
    await until(async () => (await metric('fred_signer_lanes{state="demoted"}')) >= 1, "a demoted lane", {
      context: () => stack.providerd?.logTail() ?? "",
    });
    assert.ok(proxy.refused > 0);
    assert.ok((await metric("fred_signer_demotions_total")) > demotions);
    proxy.refuseTxsWith = undefined;
    // The refusal made the pass unsettled, so it is retried (backoff) without the hour's wait.
    await until(grantsComplete, "grants re-created by a retried pass", {
      context: () => stack.providerd?.logTail() ?? "",
    });
    await lanesServeAgain();
  });
});
