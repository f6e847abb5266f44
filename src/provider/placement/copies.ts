import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { ProviderConfig } from "../config/index.ts";
import {
  backupBeside,
  PayloadStore,
  PlacementStore,
  type SnapshotSet,
  takeSnapshot,
} from "../store/index.ts";
import { placementStoreFile } from "./store-file.ts";

/**
 * The offline halves of online snapshots: `fred placement snapshot` (one set now, taken
 * through read-only connections, so it works beside a running providerd) and the attest
 * step of a restore (`fred placement repair --attest-restored-backup --apply`).
 */
export async function snapshotStores(
  config: ProviderConfig,
  clock: Clock,
  dir?: string,
): Promise<SnapshotSet> {
  const target = dir ?? config.placementSnapshotDir;
  if (target === "") {
    throw new FredError("ERR_USAGE", "placement_snapshot_dir is not set; set it or pass --dir <directory>");
  }
  using placement = PlacementStore.open(
    placementStoreFile(config, "fred placement snapshot"),
    config.providerUuid,
    {
      readonly: true,
    },
  );
  const payload =
    config.payloadStoreDbPath === undefined
      ? undefined
      : PayloadStore.open(config.payloadStoreDbPath, { readonly: true });
  try {
    return await takeSnapshot(target, { placement, payload }, clock.now(), config.placementSnapshotRetain);
  } finally {
    payload?.close();
  }
}

export interface AttestSummary {
  placement_store: string;
  apply: boolean;
  copy_taken_at: string | null;
  backup?: string;
  attested: boolean;
  /** What --apply does (or did). */
  effects: string[];
}

const EFFECTS = [
  "removes the restored-copy mark, so providerd opens the store",
  "clears every backend's inventory baseline: /readyz waits for a fresh complete sweep, which adopts leases the copy does not know",
];

/** Dry run by default; with `apply`, a backup first, then the attestation. */
export async function attestRestoredBackup(
  config: ProviderConfig,
  clock: Clock,
  apply: boolean,
): Promise<AttestSummary> {
  const path = placementStoreFile(config, "fred placement repair --attest-restored-backup");
  if (!apply) {
    using store = PlacementStore.open(path, config.providerUuid, { readonly: true });
    const at = store.copies.takenAt();
    return {
      placement_store: path,
      apply,
      copy_taken_at: at === undefined ? null : new Date(at).toISOString(),
      attested: false,
      effects: at === undefined ? [] : EFFECTS,
    };
  }
  using store = PlacementStore.open(path, config.providerUuid, { restoredCopy: "allow" });
  if (store.copies.takenAt() === undefined) {
    throw new FredError(
      "ERR_PLACEMENT_RESTORED",
      `placement store ${path} is not a restored copy; nothing to attest`,
    );
  }
  const backup = await backupBeside(store, clock.now());
  const { copy_taken_at } = store.copies.attest(clock.now());
  await store.durable();
  return {
    placement_store: path,
    apply,
    copy_taken_at: new Date(copy_taken_at).toISOString(),
    backup,
    attested: true,
    effects: EFFECTS,
  };
}
