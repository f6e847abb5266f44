/**
 * `fred devnet init`'s genesis choices against a real devnet: accounts from chosen mnemonics
 * (checked against cosmjs's own derivation) and funded, a chosen chain id in status, blocks
 * and signatures, a token-factory PWR denom with its bank metadata carrying a whole lease,
 * the chosen module authority, and an initialised home refusing different choices.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Secp256k1HdWallet } from "@cosmjs/amino";
import { entropyToMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import {
  BillingMsgUpdateParams,
  MsgAcknowledgeLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgWithdraw,
  MsgWithdrawResponse,
  QuerySKUsRequest,
  QuerySKUsResponse,
  timestampToNanos,
} from "../../src/chain/proto/index.ts";
import { parseSkuDef } from "../../src/cli/provider-init.ts";
import { DEV_ACCOUNT_FUNDS } from "../../src/devnet/genesis.ts";
import { GENESIS_CREDIT, GENESIS_WALLET_PWR } from "../../src/devnet/modules/billing/genesis.ts";
import { DEFAULT_PARAMS } from "../../src/devnet/modules/billing/params.ts";
import { runFred } from "../support/index.ts";
import { rpc } from "./helpers.ts";
import {
  type Chain,
  eventsOf,
  FEE,
  getCreditAccount,
  getLease,
  msg,
  S,
  startChain,
} from "./modules/harness.ts";

/** Fixed entropy: the same valid 24-word mnemonics on every run. */
const mnemonic = (seed: number) => entropyToMnemonic(new Uint8Array(32).fill(seed), wordlist);
const CHOSEN = { provider: mnemonic(1), tenant1: mnemonic(2), admin: mnemonic(3) };
const CHAIN_ID = "manifest-local-7";

async function cosmjsAddress(words: string): Promise<string> {
  const wallet = await Secp256k1HdWallet.fromMnemonic(words, { prefix: "manifest" });
  return (await wallet.getAccounts())[0]!.address;
}

let chain: Chain;
let admin: string;
let denom: string;
let initFlags: string[];

before(async () => {
  admin = await cosmjsAddress(CHOSEN.admin);
  // As on the Manifest chain: PWR is a token-factory denom created by the POA admin.
  denom = `factory/${admin}/upwr`;
  initFlags = [
    "--chain-id",
    CHAIN_ID,
    "--pwr-denom",
    denom,
    "--authority",
    admin,
    ...Object.entries(CHOSEN).flatMap(([name, words]) => ["--account", `${name}=${words}`]),
  ];
  chain = await startChain({ args: initFlags });
});
after(() => chain?.stop());

describe("fred devnet init: chosen accounts", () => {
  it("gives each chosen account the address Secp256k1HdWallet derives, funded at genesis", async () => {
    const names = chain.devnet.keys.accounts.map((a) => a.name);
    assert.deepEqual(names, ["provider", "tenant1", "tenant2", "faucet", "admin"]);
    for (const [name, words] of Object.entries(CHOSEN)) {
      const address = await cosmjsAddress(words);
      assert.equal(chain.address(name), address, name);
      assert.equal(chain.devnet.account(name).mnemonic, words, name);
      const umfx = await chain.query.bank.balance(address, "umfx");
      assert.equal(BigInt(umfx.amount), DEV_ACCOUNT_FUNDS, `${name} umfx`);
    }
    // The tenant keeps its PWR wallet and credit, now in the chosen denom.
    const wallet = await chain.query.bank.balance(chain.address("tenant1"), denom);
    assert.equal(BigInt(wallet.amount), GENESIS_WALLET_PWR);
    assert.equal(BigInt((await chain.query.bank.balance(chain.address("tenant1"), "upwr")).amount), 0n);
    // tenant2 was not chosen: a fresh mnemonic, still a working account.
    const t2 = chain.devnet.account("tenant2");
    assert.equal(await cosmjsAddress(t2.mnemonic), t2.address);
    assert.ok(!Object.values(CHOSEN).includes(t2.mnemonic));
  });
});

describe("fred devnet init --chain-id", () => {
  it("is the chain id of status, blocks and genesis, and the one signatures must commit to", async () => {
    const status = await rpc(chain.devnet.rpc, "status");
    assert.equal(status.result.node_info.network, CHAIN_ID);
    const block = await rpc(chain.devnet.rpc, "block", { height: "1" });
    assert.equal(block.result.block.header.chain_id, CHAIN_ID);
    const genesis = await rpc(chain.devnet.rpc, "genesis");
    assert.equal(genesis.result.genesis.chain_id, CHAIN_ID);
    assert.equal(chain.devnet.keys.chain_id, CHAIN_ID);
    assert.equal(chain.devnet.proc.ready.chain_id, CHAIN_ID, "the ready line of fred devnet start");

    const client = await chain.client("admin");
    assert.equal(await client.getChainId(), CHAIN_ID);
    const send = {
      typeUrl: "/cosmos.bank.v1beta1.MsgSend",
      value: {
        fromAddress: admin,
        toAddress: chain.address("tenant2"),
        amount: [{ denom: "umfx", amount: "7" }],
      },
    };
    const account = await client.getAccount(admin);
    // Signed for the default chain id: the signature does not verify here (sdk code 4).
    const wrong = await client.sign(admin, [send], FEE, "", {
      chainId: "fred-devnet-1",
      accountNumber: account!.accountNumber,
      sequence: account!.sequence,
    });
    const refused = await rpc(chain.devnet.rpc, "broadcast_tx_sync", {
      tx: Buffer.from(TxRaw.encode(wrong).finish()).toString("base64"),
    });
    assert.equal(refused.result.code, 4, refused.result.log);
    assert.match(refused.result.log, /signature verification failed/);
    const ok = await chain.send("admin", [send]);
    assert.equal(ok.code, 0, ok.rawLog);
  });
});

describe("fred devnet init --pwr-denom factory/…", () => {
  it("prices the SKUs in it and gives it and umfx bank denom metadata", async () => {
    const skus = await chain.abci(
      "/liftedinit.sku.v1.Query/SKUs",
      QuerySKUsRequest,
      { pagination: undefined, activeOnly: false },
      QuerySKUsResponse,
    );
    assert.equal(skus.skus.length, 4);
    for (const s of skus.skus) assert.equal(s.basePrice?.denom, denom, s.name);
    assert.equal(chain.devnet.keys.pwr_denom, denom);

    const pwr = await chain.query.bank.denomMetadata(denom);
    assert.deepEqual(
      { base: pwr.base, display: pwr.display, name: pwr.name, symbol: pwr.symbol },
      { base: denom, display: "PWR", name: "POWER", symbol: "PWR" },
    );
    assert.deepEqual(
      pwr.denomUnits.map((u) => [u.denom, u.exponent]),
      [
        [denom, 0],
        ["PWR", 6],
      ],
    );
    const mfx = await chain.query.bank.denomMetadata("umfx");
    assert.equal(mfx.display, "MFX");
    assert.deepEqual(
      mfx.denomUnits.map((u) => [u.denom, u.exponent]),
      [
        ["umfx", 0],
        ["MFX", 6],
      ],
    );
    const all = await chain.query.bank.denomsMetadata();
    assert.deepEqual(all.map((m) => m.base).sort(), [denom, "umfx"].sort());
    // fred provider init takes such a price as written (the SKU spec splits on ':').
    assert.deepEqual(parseSkuDef(`docker-xl:2880000${denom}:2:4096`).price, { denom, amount: "2880000" });
  });

  it("carries a lease through create, acknowledge, withdraw and close, paying the provider in it", async () => {
    const tenant = chain.address("tenant1");
    const provider = chain.address("provider");
    const small = chain.devnet.keys.skus.find((s) => s.name === "docker-small")!.uuid;
    // fred chain credit fund takes the factory denom as written (chain id read from the node).
    const fund = await runFred([
      "chain",
      "credit",
      "fund",
      "--tenant",
      tenant,
      "--amount",
      `5000000${denom}`,
      "--from",
      "tenant1",
      "--home",
      chain.devnet.home,
      "--rpc",
      chain.devnet.rpc,
    ]);
    assert.equal(fund.code, 0, fund.stderr);
    assert.deepEqual(JSON.parse(fund.stdout).new_balance, {
      denom,
      amount: String(GENESIS_CREDIT + 5_000_000n),
    });
    const created = await chain.send("tenant1", [
      msg(MsgCreateLease, { tenant, items: [{ skuUuid: small, quantity: 1n, serviceName: "" }] }),
    ]);
    assert.equal(created.code, 0, created.rawLog);
    const uuid = MsgCreateLeaseResponse.decode(created.msgResponses[0]!.value).leaseUuid;
    // docker-small: 360 000 per hour = 100 per second, reserved for an hour.
    assert.equal(eventsOf(created, "lease_created")[0]!.total_rate_per_second, `100${denom}`);
    const lease = await getLease(chain, uuid);
    assert.deepEqual(lease.items[0]!.lockedPrice, { denom, amount: "100" });
    assert.deepEqual(lease.reservation?.remainingAmounts, [{ denom, amount: "360000" }]);

    const acked = await chain.send("provider", [
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [uuid] }),
    ]);
    assert.equal(acked.code, 0, acked.rawLog);
    const ackedAt = timestampToNanos((await getLease(chain, uuid)).acknowledgedAt!);

    await chain.advance(100);
    const before = BigInt((await chain.query.bank.balance(provider, denom)).amount);
    const w = await chain.send("provider", [msg(MsgWithdraw, { sender: provider, leaseUuids: [uuid] })]);
    assert.equal(w.code, 0, w.rawLog);
    const seconds = ((await chain.blockTimeNs(w.height)) - ackedAt) / S;
    assert.ok(seconds >= 100n);
    const withdrawn = MsgWithdrawResponse.decode(w.msgResponses[0]!.value).totalAmounts;
    assert.deepEqual(withdrawn, [{ denom, amount: String(100n * seconds) }]);
    const afterWithdraw = BigInt((await chain.query.bank.balance(provider, denom)).amount);
    assert.equal(afterWithdraw - before, 100n * seconds);

    const closed = await chain.send("provider", [
      msg(MsgCloseLease, { sender: provider, leaseUuids: [uuid], reason: "done" }),
    ]);
    assert.equal(closed.code, 0, closed.rawLog);
    // Closing settles the seconds since the withdrawal, paid to the provider at once.
    const atClose = 100n * BigInt(eventsOf(closed, "lease_closed")[0]!.duration_seconds!);
    assert.equal(
      eventsOf(closed, "lease_closed")[0]!.settled_amounts,
      atClose === 0n ? "" : `${atClose}${denom}`,
    );
    const paid = BigInt((await chain.query.bank.balance(provider, denom)).amount) - before;
    assert.equal(paid, 100n * seconds + atClose, "every settled second paid in the factory denom");
    assert.equal(BigInt((await chain.query.bank.balance(provider, "upwr")).amount), 0n);
    // The credit paid for it in the same denom; the released reservation is back in it.
    const credit = await getCreditAccount(chain, tenant);
    const left = await chain.query.bank.balance(credit.creditAccount!.creditAddress, denom);
    assert.equal(BigInt(left.amount), GENESIS_CREDIT + 5_000_000n - paid);
  });
});

describe("fred devnet init --authority", () => {
  it("lets that address, and no other, run an authority-only message", async () => {
    const tenant = chain.address("tenant1");
    assert.equal(chain.devnet.keys.authority, admin);
    const params = { ...DEFAULT_PARAMS, reservedDomainSuffixes: [".genesis.test"] };
    const other = await chain.send("tenant1", [msg(BillingMsgUpdateParams, { authority: tenant, params })]);
    assert.equal(other.code, 6, other.rawLog);
    assert.equal((await chain.txResult(other.transactionHash)).codespace, "billing");
    assert.match(other.rawLog ?? "", new RegExp(`expected ${admin}, got ${tenant}: unauthorized`));
    const ok = await chain.send("admin", [msg(BillingMsgUpdateParams, { authority: admin, params })]);
    assert.equal(ok.code, 0, ok.rawLog);
    assert.equal(eventsOf(ok, "params_updated").length, 1);
  });
});

describe("an initialised home", () => {
  it("refuses different genesis flags on init and start, and accepts the same ones", async () => {
    const dn = chain.devnet;
    await dn.kill();
    const keysBefore = readFileSync(join(dn.home, "keys.json"), "utf8");
    // Any difference is refused, on init and on a start of the initialised home alike.
    const refusals: [string[], RegExp][] = [
      [
        ["--chain-id", "other-1"],
        /initialised with --chain-id manifest-local-7; it cannot change to other-1/,
      ],
      [["--pwr-denom", "upwr"], /initialised with --pwr-denom factory\/.*\/upwr; it cannot change to upwr/],
      [["--authority", chain.address("tenant2")], /initialised with --authority manifest1/],
      [["--account", `provider=${mnemonic(9)}`], /another mnemonic for provider/],
      [["--account", `newcomer=${mnemonic(9)}`], /has no account newcomer/],
    ];
    for (const [flags, why] of refusals) {
      for (const command of [["init"], ["start", "--rpc-port", "0"]]) {
        const r = await runFred(["devnet", ...command, "--home", dn.home, ...flags]);
        assert.equal(r.code, 1, `${command[0]} ${flags.join(" ")}: ${r.stderr}`);
        assert.match(r.stderr, why);
        assert.equal(r.stdout, "");
      }
    }
    const same = await runFred(["devnet", "init", "--home", dn.home, ...initFlags]);
    assert.equal(same.code, 0, same.stderr);
    assert.equal(JSON.parse(same.stdout).created, false);
    assert.equal(readFileSync(join(dn.home, "keys.json"), "utf8"), keysBefore, "keys kept");
    await dn.restart();
    assert.equal((await rpc(dn.rpc, "status")).result.node_info.network, CHAIN_ID);
  });
});

describe("bad genesis flags", () => {
  it("are refused with a clear error before the home is created", async () => {
    const home = join(tmpdir(), `fred-genesis-refused-${process.pid}`);
    const words = mnemonic(4);
    const badChecksum = `${"abandon ".repeat(11)}abandon`;
    const cases: [string[], RegExp][] = [
      [["--account", `provider=${badChecksum}`], /--account provider: the mnemonic is not a valid BIP-39/],
      [["--account", "provider"], /--account must be <name>=<mnemonic>/],
      [["--account", `Bad=${words}`], /--account "Bad": a name is a lowercase letter/],
      [["--account", `ops=${words}`, "--account", `ops=${mnemonic(5)}`], /--account ops is given twice/],
      [
        ["--account", `ops=${words}`, "--account", `dev=${words}`],
        /ops and --account dev have the same mnemonic/,
      ],
      [["--chain-id", ""], /--chain-id must not be empty/],
      [["--chain-id", "a b"], /--chain-id must not contain whitespace/],
      [["--chain-id", "c".repeat(49)], /--chain-id must be at most 48 characters \(got 49\)/],
      [["--pwr-denom", "1pwr"], /--pwr-denom "1pwr" is not a valid denom/],
      [["--pwr-denom", "umfx"], /--pwr-denom cannot be umfx/],
      [
        ["--pwr-denom", "factory/manifest1nothere/upwr"],
        /a factory denom is factory\/<creator address>\/<subdenom>; invalid creator/,
      ],
      [["--pwr-denom", `factory/${admin.replace("manifest", "cosmos")}/upwr`], /invalid creator/],
      [["--pwr-denom", `factory/${admin}/`], /the subdenom must be 1 to 44 characters/],
      [
        ["--authority", "manifest1nothere"],
        /--authority "manifest1nothere": invalid authority: decoding bech32 failed/,
      ],
    ];
    for (const [flags, why] of cases) {
      const r = await runFred(["devnet", "init", "--home", home, ...flags]);
      assert.equal(r.code, 1, `${flags.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, why);
      assert.doesNotMatch(r.stderr, new RegExp(words.split(" ").slice(0, 3).join(" ")), "no mnemonic echoed");
      assert.equal(existsSync(home), false, `${flags.join(" ")} created the home`);
    }
  });
});

describe("a home made before the genesis flags", () => {
  it("reads as upwr with no chosen authority, and refuses another denom", async () => {
    const home = mkdtempSync(join(tmpdir(), "fred-genesis-old-"));
    try {
      const made = await runFred(["devnet", "init", "--home", home, "--tenants", "1"]);
      assert.equal(made.code, 0, made.stderr);
      // Such a home's keys.json has neither field.
      const path = join(home, "keys.json");
      const { pwr_denom: _denom, ...old } = JSON.parse(readFileSync(path, "utf8"));
      writeFileSync(path, JSON.stringify(old));
      const keys = await runFred(["devnet", "keys", "--home", home]);
      assert.equal(keys.code, 0, keys.stderr);
      assert.equal(JSON.parse(keys.stdout).pwr_denom, "upwr");
      const same = await runFred(["devnet", "init", "--home", home, "--pwr-denom", "upwr"]);
      assert.equal(same.code, 0, same.stderr);
      assert.deepEqual(
        [
          JSON.parse(same.stdout).created,
          JSON.parse(same.stdout).pwr_denom,
          JSON.parse(same.stdout).authority,
        ],
        [false, "upwr", null],
      );
      const other = await runFred(["devnet", "init", "--home", home, "--pwr-denom", denom]);
      assert.equal(other.code, 1);
      assert.match(other.stderr, /initialised with --pwr-denom upwr; it cannot change to factory\//);
      const authority = await runFred(["devnet", "init", "--home", home, "--authority", admin]);
      assert.equal(authority.code, 1);
      assert.match(
        authority.stderr,
        /initialised with --authority none \(POA_ADMIN_ADDRESS or the gov module/,
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
