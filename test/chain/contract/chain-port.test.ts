import type { CosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { devnet } from "../../support/index.ts";
import { clientFor, createLeases } from "../devnet/helpers.ts";
import { RecordingChain } from "../recording-chain.ts";
import { chainPortContract } from "./chain-port.contract.ts";

const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";

chainPortContract("the recording fake", async () => {
  const port = new RecordingChain({ pageLimit: 2 });
  return {
    port,
    providerUuid: PROVIDER,
    chainId: port.chainId,
    pageLimit: 2,
    createPending: async (n) => Array.from({ length: n }, () => port.addLease(PROVIDER).uuid),
    close: async () => {},
  };
});

chainPortContract("CosmosChain on a devnet", async () => {
  const dn = await devnet({ blockTime: "200ms", tenants: 1 });
  let provider: CosmosChain | undefined;
  let tenant: CosmosChain | undefined;
  try {
    provider = await clientFor(dn, "provider", { queryPageLimit: 2 });
    tenant = await clientFor(dn, "tenant1");
  } catch (err) {
    provider?.disconnect();
    await dn.stop();
    throw err;
  }
  const t = tenant;
  return {
    port: provider,
    providerUuid: dn.keys.provider_uuid,
    chainId: dn.keys.chain_id,
    pageLimit: 2,
    createPending: (n) => createLeases(t, dn, n),
    close: async () => {
      provider?.disconnect();
      t.disconnect();
      await dn.stop();
    },
  };
});
