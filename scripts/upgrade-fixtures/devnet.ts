import { createHash } from "node:crypto";
import { type CosmosChain, openCosmosChain } from "../../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../../src/chain/cosmos/signer.ts";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../src/chain/proto/index.ts";
import { readKeys } from "../../src/devnet/home.ts";
import { startDevnet } from "../../src/devnet/main.ts";
import { createLogger } from "../../src/log.ts";

/**
 * The devnet part of an upgrade fixture: a home with one tenant and a handful of leases in
 * every state providerd meets (PENDING, ACTIVE, CLOSED), written by the real devnet and
 * the real chain client. The lease UUIDs it returns are the ones the other stores of the
 * fixture record, so the set reads as one provider's state at one moment. The home's
 * keys.json holds the mnemonics of this throwaway chain's dev accounts, as every devnet
 * home does; they guard nothing outside it.
 */
export interface FixtureLeases {
  providerUuid: string;
  /** Each lease's role in the fixture (see providerd.ts), by name. */
  leases: Record<LeaseRole, string>;
  /** The manifest each payload lease's meta_hash commits to. */
  payloads: Partial<Record<LeaseRole, Buffer>>;
}

/**
 * active: confirmed on docker-1 with maintenance history; served: confirmed on mock-1;
 * pending: provision attempt at docker-1; probing: attempt at mock-1 whose outcome is open;
 * retained: closed, its data kept on docker-1; restoring: a restore of `retained`'s data;
 * disputed: both backends report it (a conflict); failed: its provision failed on docker-1.
 */
export type LeaseRole =
  | "active"
  | "served"
  | "pending"
  | "probing"
  | "retained"
  | "restoring"
  | "disputed"
  | "failed";

const ROLES: readonly LeaseRole[] = [
  "active",
  "served",
  "pending",
  "probing",
  "retained",
  "restoring",
  "disputed",
  "failed",
];

/** Manifests for the leases that have one: their SHA-256 is the lease's meta_hash on chain. */
export const MANIFESTS: Partial<Record<LeaseRole, string>> = {
  active: '{"services":{"web":{"image":"docker.io/library/nginx:1.27"}}}',
  pending: '{"services":{"app":{"image":"docker.io/library/redis:7.4"}}}',
  retained:
    '{"services":{"app":{"image":"docker.io/library/postgres:17"},"db":{"image":"docker.io/library/postgres:17"}}}',
};

export async function writeDevnetHome(home: string): Promise<FixtureLeases> {
  const devnet = await startDevnet({
    home,
    tenants: 1,
    rpcPort: 0,
    // Blocks only when txs wait: the fixture's chain stays a few blocks long.
    blockTimeMs: 0,
    logger: createLogger("fixture-devnet", "warn"),
  });
  const chains: CosmosChain[] = [];
  try {
    const keys = readKeys(home);
    if (keys === undefined) throw new Error(`devnet home ${home} has no keys file`);
    const key = (name: string) => {
      const account = keys.accounts.find((a) => a.name === name);
      if (account === undefined) throw new Error(`devnet home has no ${name} account`);
      return signerFromKey(Buffer.from(account.private_key_hex, "hex"));
    };
    const open = async (name: string) => {
      const chain = await openCosmosChain({
        rpcUrl: devnet.url,
        signer: key(name),
        txPollIntervalMs: 50,
        txTimeoutMs: 20_000,
      });
      chains.push(chain);
      return chain;
    };
    const tenant = await open("tenant1");
    const provider = await open("provider");
    const sku = keys.skus.find((s) => !s.billing_only);
    if (sku === undefined) throw new Error("the devnet genesis has no billable SKU");

    const payloads: FixtureLeases["payloads"] = {};
    const messages = ROLES.map((role) => {
      const manifest = MANIFESTS[role];
      if (manifest !== undefined) payloads[role] = Buffer.from(manifest);
      const metaHash =
        manifest === undefined ? new Uint8Array() : createHash("sha256").update(manifest).digest();
      return {
        typeUrl: MsgCreateLease.typeUrl,
        value: MsgCreateLease.fromPartial({
          tenant: tenant.address,
          items: [{ skuUuid: sku.uuid, quantity: 1n }],
          metaHash,
        }),
      };
    });
    const created = await tenant.send(messages);
    const uuids = created.msgResponses.map((r) => MsgCreateLeaseResponse.decode(r.value).leaseUuid);
    const leases = Object.fromEntries(ROLES.map((role, i) => [role, uuids[i]!])) as Record<LeaseRole, string>;

    await expectOk(provider.acknowledge([leases.active, leases.served, leases.retained, leases.disputed]));
    await expectOk(provider.closeLeases([leases.retained], "tenant asked to close; data retained"));
    return { providerUuid: keys.provider_uuid, leases, payloads };
  } finally {
    for (const chain of chains) chain.disconnect();
    await devnet.stop();
  }
}

async function expectOk(outcomes: Promise<{ leaseUuid: string; status: string }[]>): Promise<void> {
  for (const o of await outcomes) {
    if (o.status === "rejected" || o.status === "failed") {
      throw new Error(`lease ${o.leaseUuid}: the chain answered ${o.status}`);
    }
  }
}
