import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { type ProviderConfig, parseProviderConfig } from "../../../src/provider/config/index.ts";
import { MaintenanceJournal } from "../../../src/provider/maintenance/journal.ts";
import { PayloadStore, PlacementStore, TokenTracker } from "../../../src/provider/store/index.ts";
import { PROVIDER_ADDRESS } from "../config/fixtures.ts";
import { LEASE_1, LEASE_2, OP_1, OP_2, PROVIDER, SID_1, SID_2, T0 } from "../store/fixture.ts";
import { WITH_PASSWORD } from "../store/payload-records-contract.ts";

/**
 * A provider whose stores hold rows of every kind (placements, attempts, a conflict, a
 * retained mark, a maintenance command, payloads, spent tokens), for the tests of the
 * placement tools and of `fred placement migrate`.
 */
let made = 0;

/** The config of `filled`'s provider with its stores in PostgreSQL at `url` (`backends`: its backends' list, one unreachable by default). */
export function postgresConfigOf(
  filled: ProviderConfig,
  url: string,
  backends: Record<string, unknown>[] = [
    { name: "one", url: "http://127.0.0.1:9001", hmac_secret: "s".repeat(32), default: true },
  ],
): ProviderConfig {
  return parseProviderConfig(
    stringify({
      provider_uuid: filled.providerUuid,
      provider_address: PROVIDER_ADDRESS,
      keyring_dir: join(filled.stateDir, "keyring"),
      key_name: "provider",
      callback_base_url: "http://127.0.0.1:8080",
      database_url: url,
      state_dir: filled.stateDir,
      backends,
    }),
  );
}

/** A state directory under `root` with the three stores filled with rows of every kind; its config. */
export async function filledProvider(root: string, provider = PROVIDER): Promise<ProviderConfig> {
  const dir = join(root, `state-${++made}`);
  mkdirSync(dir);
  const paths = {
    placement_store_db_path: join(dir, "placements.db"),
    payload_store_db_path: join(dir, "payloads.db"),
    token_tracker_db_path: join(dir, "tokens.db"),
  };
  const config = parseProviderConfig(
    stringify({
      provider_uuid: provider,
      provider_address: PROVIDER_ADDRESS,
      keyring_dir: join(dir, "keyring"),
      key_name: "provider",
      callback_base_url: "http://127.0.0.1:8080",
      ...paths,
      backends: [{ name: "one", url: "http://127.0.0.1:9001", hmac_secret: "s".repeat(32), default: true }],
    }),
  );
  writeFileSync(join(dir, "providerd.yaml"), stringify(config));
  {
    using store = PlacementStore.create(
      paths.placement_store_db_path,
      provider,
      [
        { name: "one", storageId: SID_1, baseline: { provisions: 3, retentions: 1 } },
        { name: "two", storageId: SID_2, baseline: { provisions: 0, retentions: 0 } },
      ],
      T0,
    );
    const p = store.placements;
    p.recordAttempt({
      leaseUuid: LEASE_1,
      backend: "one",
      operationId: OP_1,
      kind: "provision",
      createdAt: T0,
    });
    p.settleOperation(LEASE_1, OP_1, "success", T0 + 1);
    p.retained.mark(LEASE_1, "one", SID_1, T0 + 2);
    p.recordAttempt({
      leaseUuid: LEASE_2,
      backend: "two",
      operationId: OP_2,
      kind: "provision",
      createdAt: T0 + 3,
    });
    p.quarantine("0190f3a2-7c1e-7000-8000-000000000003", ["one", "two"], T0 + 4);
    MaintenanceJournal.of(p).admit({
      leaseUuid: LEASE_1,
      key: "k1",
      maintenanceId: "33333333-3333-4333-8333-333333333333",
      tenant: "manifest1tenant",
      kind: "update",
      payload: Buffer.from('{"image":"app:2"}'),
      backend: "one",
      lifecycleId: OP_1,
      nowMs: T0 + 5,
    });
    await store.durable();
  }
  {
    using payloads = PayloadStore.open(paths.payload_store_db_path);
    await payloads.put(LEASE_2, WITH_PASSWORD, T0);
    await payloads.put(LEASE_1, Buffer.from('{"image":"app:1"}'), T0);
    await payloads.mask(LEASE_1);
  }
  {
    using tokens = TokenTracker.open(paths.token_tracker_db_path);
    await tokens.tryUse("token-a", T0 + 60_000, T0);
    await tokens.tryUse("token-b", T0 + 90_000, T0);
  }
  return config;
}
