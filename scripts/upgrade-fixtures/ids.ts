/**
 * The fixed identities and clock of an upgrade fixture. Operation and storage ids are
 * written out rather than drawn at random so two fixture sets can be compared by eye; the
 * lease UUIDs come from the devnet, which assigns them.
 */

/** Every store's `now`: 2026-01-15T00:00:00Z, plus a few seconds per step. */
export const AT = Date.UTC(2026, 0, 15);

export const BACKENDS = [
  { name: "docker-1", storageId: "0b6f1e2a-4c3d-4e5f-8a7b-9c0d1e2f3a4b" },
  { name: "mock-1", storageId: "1c7a2f3b-5d4e-4f60-9b8c-0d1e2f3a4b5c" },
] as const;

/** Operation and maintenance ids (canonical lowercase UUIDv4). */
export const OPS = {
  active: "2d8b3a4c-6e5f-4a71-8c9d-1e2f3a4b5c6d",
  served: "3e9c4b5d-7f6a-4b82-9dae-2f3a4b5c6d7e",
  pending: "4fad5c6e-8a7b-4c93-aebf-3a4b5c6d7e8f",
  probing: "50be6d7f-9b8c-4da4-bfc0-4b5c6d7e8f90",
  retained: "61cf7e80-ac9d-4eb5-80d1-5c6d7e8f90a1",
  restoring: "72d08f91-bdae-4fc6-91e2-6d7e8f90a1b2",
  disputed: "83e190a2-cebf-40d7-a2f3-7e8f90a1b2c3",
  disputedMock: "94f2a1b3-dfc0-41e8-b304-8f90a1b2c3d4",
  failed: "a503b2c4-e0d1-42f9-8415-90a1b2c3d4e5",
  restart: "b614c3d5-f1e2-430a-9526-a1b2c3d4e5f6",
  update: "c725d4e6-02f3-441b-a637-b2c3d4e5f607",
} as const;

/** Spent tenant tokens (replay keys) and when each stops verifying: far in the future, so no sweep drops them. */
export const TOKENS = [
  { key: "tenant-token-a", expiresAt: Date.UTC(2100, 0, 1) },
  { key: "tenant-token-b", expiresAt: Date.UTC(2100, 0, 2) },
  { key: "tenant-token-c", expiresAt: Date.UTC(2100, 0, 3) },
] as const;
