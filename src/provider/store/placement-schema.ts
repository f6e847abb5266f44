/**
 * Placement store schema, migration N = index N-1. Append only: a released migration is
 * never edited, because a database that already ran it would silently differ.
 */
export const PLACEMENT_MIGRATIONS: readonly string[] = [
  `
  -- Every backend the store knows, with the storage identity pinned at init (a renamed
  -- or replaced backend storage must never be mistaken for this one) and the last
  -- complete inventory baseline.
  CREATE TABLE backends (
    name                TEXT PRIMARY KEY,
    storage_id          TEXT NOT NULL UNIQUE,
    pinned_at           INTEGER NOT NULL,
    baseline_at         INTEGER,
    baseline_provisions INTEGER,
    baseline_retentions INTEGER
  ) STRICT;

  -- Where a lease lives: one confirmed owner, or a conflict naming every backend that
  -- reported it. Rows are never deleted by silence.
  CREATE TABLE placements (
    lease_uuid  TEXT PRIMARY KEY,
    state       TEXT NOT NULL CHECK (state IN ('confirmed', 'conflict')),
    owner       TEXT REFERENCES backends(name),
    candidates  TEXT NOT NULL DEFAULT '[]',
    updated_at  INTEGER NOT NULL,
    CHECK ((state = 'confirmed') = (owner IS NOT NULL))
  ) STRICT;

  -- Write-ahead attempts: committed before the backend is called, removed only by the
  -- exact operation's callback, a positive inventory report, or a definite refusal.
  CREATE TABLE attempts (
    operation_id TEXT PRIMARY KEY,
    lease_uuid   TEXT NOT NULL UNIQUE,
    backend      TEXT NOT NULL REFERENCES backends(name),
    kind         TEXT NOT NULL CHECK (kind IN ('provision', 'restore')),
    created_at   INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX attempts_by_backend ON attempts(backend);
  `,
];
