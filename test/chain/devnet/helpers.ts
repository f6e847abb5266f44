/** Shared steps for chain-client tests against a real devnet process. */
import {
  type CosmosChain,
  type CosmosChainOptions,
  openCosmosChain,
} from "../../../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../../../src/chain/cosmos/signer.ts";
import {
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgCreateProvider,
  MsgCreateProviderResponse,
  MsgCreateSKU,
  MsgCreateSKUResponse,
  Unit,
} from "../../../src/chain/proto/index.ts";
import { type Devnet, until } from "../../support/index.ts";

export async function clientFor(
  dn: Devnet,
  account: string,
  opts: Partial<CosmosChainOptions> = {},
): Promise<CosmosChain> {
  const key = Buffer.from(dn.account(account).private_key_hex, "hex");
  return openCosmosChain({
    rpcUrl: dn.rpc,
    signer: signerFromKey(key),
    txPollIntervalMs: 50,
    txTimeoutMs: 20_000,
    ...opts,
  });
}

/** Creates `n` single-item leases for the tenant behind `c` (one tx, n messages). */
export async function createLeases(
  c: CosmosChain,
  dn: Devnet,
  n: number,
  sku = "docker-small",
): Promise<string[]> {
  const skuUuid = dn.keys.skus.find((s) => s.name === sku)?.uuid as string;
  const msgs = Array.from({ length: n }, () => ({
    typeUrl: MsgCreateLease.typeUrl,
    value: MsgCreateLease.fromPartial({ tenant: c.address, items: [{ skuUuid, quantity: 1n }] }),
  }));
  const res = await c.send(msgs);
  return res.msgResponses.map((a) => MsgCreateLeaseResponse.decode(a.value).leaseUuid);
}

/** Moves the devnet's block time forward and waits until a block carries the jump. */
export async function advanceTime(dn: Devnet, c: CosmosChain, seconds: number): Promise<void> {
  const before = (await c.latestBlock()).time.getTime();
  await dn.call("devnet_advance_time", { seconds });
  await until(
    async () => (await c.latestBlock()).time.getTime() >= before + seconds * 1000,
    `block time +${seconds}s`,
  );
}

/**
 * Another provider (operated by `operator`) with one SKU, created through the module
 * authority — the devnet must run with POA_ADMIN_ADDRESS set to `authority`'s address — and
 * a PENDING single-item lease of `tenant` on it.
 */
export async function leaseOnNewProvider(
  authority: CosmosChain,
  operator: string,
  tenant: CosmosChain,
): Promise<{ providerUuid: string; lease: string }> {
  const created = await authority.send([
    {
      typeUrl: MsgCreateProvider.typeUrl,
      value: MsgCreateProvider.fromPartial({
        authority: authority.address,
        address: operator,
        payoutAddress: operator,
        apiUrl: "https://p2.example",
      }),
    },
  ]);
  if (created.code !== 0) throw new Error(`MsgCreateProvider failed: ${created.rawLog}`);
  const providerUuid = MsgCreateProviderResponse.decode(created.msgResponses[0]!.value).uuid;
  const sku = await authority.send([
    {
      typeUrl: MsgCreateSKU.typeUrl,
      value: MsgCreateSKU.fromPartial({
        authority: authority.address,
        providerUuid,
        name: "p2-small",
        unit: Unit.UNIT_PER_HOUR,
        basePrice: { denom: "upwr", amount: "360000" },
      }),
    },
  ]);
  if (sku.code !== 0) throw new Error(`MsgCreateSKU failed: ${sku.rawLog}`);
  const skuUuid = MsgCreateSKUResponse.decode(sku.msgResponses[0]!.value).uuid;
  const res = await tenant.send([
    {
      typeUrl: MsgCreateLease.typeUrl,
      value: MsgCreateLease.fromPartial({ tenant: tenant.address, items: [{ skuUuid, quantity: 1n }] }),
    },
  ]);
  return { providerUuid, lease: MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid };
}
