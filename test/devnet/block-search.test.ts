/**
 * CometBFT's `block_search` on a real devnet through cosmjs' Comet38Client: blocks found by
 * their FinalizeBlock (EndBlock) events and by `block.height`, newest first by default,
 * paged, with CometBFT's errors; and found again after a restart on a database from before
 * the block index existed (the migration fills it from the stored blocks).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Comet38Client } from "@cosmjs/tendermint-rpc";
import Database from "better-sqlite3";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../src/chain/proto/index.ts";
import { rpc } from "./helpers.ts";
import { type Chain, msg, startChain } from "./modules/harness.ts";

let chain: Chain;
let expiredAt = 0;
const expired: string[] = [];

async function createPending(): Promise<string> {
  const t1 = chain.address("tenant1");
  const small = chain.devnet.keys.skus.find((s) => s.name === "docker-small")!.uuid;
  const res = await chain.send("tenant1", [
    msg(MsgCreateLease, { tenant: t1, items: [{ skuUuid: small, quantity: 1n, serviceName: "" }] }),
  ]);
  assert.equal(res.code, 0, res.rawLog);
  return MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
}

before(async () => {
  chain = await startChain({ checkEveryBlock: false });
  expired.push(await createPending(), await createPending());
  await chain.advance(1801);
  await chain.produceBlock();
  expiredAt = (await chain.comet.block()).block.header.height;
  for (let i = 0; i < 3; i++) await chain.produceBlock();
});
after(() => chain.stop());

describe("block_search", { timeout: 120_000 }, () => {
  it("finds the block whose EndBlock expired a lease, by event attribute", async () => {
    const res = await chain.comet.blockSearch({ query: `lease_expired.lease_uuid='${expired[1]}'` });
    assert.equal(res.totalCount, 1);
    assert.equal(res.blocks.length, 1);
    assert.equal(res.blocks[0]!.block.header.height, expiredAt);
    const direct = await chain.comet.block(expiredAt);
    assert.deepEqual(res.blocks[0]!.blockId, direct.blockId);
    const both = await chain.comet.blockSearch({
      query: `lease_expired.reason='pending_timeout' AND lease_expired.mode EXISTS AND block.height >= ${expiredAt}`,
    });
    assert.deepEqual(
      both.blocks.map((b) => b.block.header.height),
      [expiredAt],
    );
    const none = await chain.comet.blockSearch({ query: "lease_expired.lease_uuid='nope'" });
    assert.deepEqual(none, { totalCount: 0, blocks: [] });
  });

  it("filters on block.height, newest first unless order_by is asc, and pages like tx_search", async () => {
    const tip = (await chain.comet.status()).syncInfo.latestBlockHeight;
    const query = `block.height > ${tip - 4} AND block.height <= ${tip}`;
    // cosmjs sorts each page by height itself, so the node's own order is read raw.
    const raw = await rpc(chain.devnet.rpc, "block_search", { query });
    assert.equal(raw.result.total_count, "4");
    assert.deepEqual(
      raw.result.blocks.map((b: { block: { header: { height: string } } }) => Number(b.block.header.height)),
      [tip, tip - 1, tip - 2, tip - 3],
      "newest first by default",
    );
    const page2 = await chain.comet.blockSearch({ query, order_by: "asc", page: 2, per_page: 3 });
    assert.equal(page2.totalCount, 4);
    assert.deepEqual(
      page2.blocks.map((b) => b.block.header.height),
      [tip],
    );
    const all = await chain.comet.blockSearchAll({ query: `block.height <= ${tip}`, per_page: 5 });
    assert.equal(all.totalCount, tip);
    assert.deepEqual(
      all.blocks.map((b) => b.block.header.height),
      Array.from({ length: tip }, (_, i) => i + 1),
    );
    assert.equal((await chain.comet.blockSearch({ query: `block.height = ${expiredAt}` })).totalCount, 1);
  });

  it("answers bad input with CometBFT's errors", async () => {
    const beyond = await rpc(chain.devnet.rpc, "block_search", { query: "block.height > 0", page: "99" });
    assert.equal(beyond.error.code, -32603);
    assert.match(beyond.error.data, /^page should be within \[1, \d+\] range, given 99$/);
    const order = await rpc(chain.devnet.rpc, "block_search", { query: "block.height > 0", order_by: "up" });
    assert.equal(order.error.data, "expected order_by to be either `asc` or `desc` or empty");
    const syntax = await rpc(chain.devnet.rpc, "block_search", { query: "block.height >" });
    assert.match(syntax.error.data, /^failed to parse query: /);
    const missing = await rpc(chain.devnet.rpc, "block_search", {});
    assert.equal(missing.error.code, -32602);
  });

  it("still finds older blocks after a restart on a database that predates the block index", async () => {
    const devnet = chain.devnet;
    await devnet.proc.stop();
    const db = new Database(join(devnet.home, "data", "chain.sqlite"));
    db.exec("DROP TABLE block_kv");
    db.pragma("user_version = 2");
    db.close();
    await devnet.restart();
    const comet = await Comet38Client.connect(devnet.rpc);
    try {
      const res = await comet.blockSearch({ query: `lease_expired.lease_uuid='${expired[0]}'` });
      assert.deepEqual(
        res.blocks.map((b) => b.block.header.height),
        [expiredAt],
      );
    } finally {
      comet.disconnect();
    }
  });
});
