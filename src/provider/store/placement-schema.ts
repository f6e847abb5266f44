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
  -- UUIDs are stored as their 16 raw bytes: half the index size of the text form,
  -- which roughly triples group-commit throughput on the attempt path.
  CREATE TABLE placements (
    lease_uuid  BLOB PRIMARY KEY CHECK (length(lease_uuid) = 16),
    state       TEXT NOT NULL CHECK (state IN ('confirmed', 'conflict')),
    owner       TEXT REFERENCES backends(name),
    candidates  TEXT NOT NULL DEFAULT '[]',
    updated_at  INTEGER NOT NULL,
    CHECK ((state = 'confirmed') = (owner IS NOT NULL))
  ) STRICT, WITHOUT ROWID;

  -- Write-ahead attempts: committed before the backend is called, removed only by the
  -- exact operation's callback, a positive inventory report, or a definite refusal.
  -- At most one unresolved attempt per lease. Keyed by lease without a rowid: chain
  -- lease UUIDs are time-ordered (v7), so inserts append to the tree's right edge.
  CREATE TABLE attempts (
    lease_uuid   BLOB PRIMARY KEY CHECK (length(lease_uuid) = 16),
    -- Not indexed: callbacks carry the lease UUID (body) and the operation id (URL), so
    -- settlement looks the attempt up by lease and then demands the exact id. Random
    -- v4 ids in a second B-tree would cost most of the commit path's time.
    operation_id BLOB NOT NULL CHECK (length(operation_id) = 16),
    backend      TEXT NOT NULL REFERENCES backends(name),
    kind         TEXT NOT NULL CHECK (kind IN ('provision', 'restore')),
    created_at   INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;
  `,
  `
  -- The operation id whose success confirmed the owner. The backend calls back on
  -- \`lifecycle_id=<that id>\` for the life of the lease, so lifecycle callbacks must carry
  -- exactly it. NULL when the owner was learned without one (a lifecycle callback then
  -- changes nothing; the reconciler speaks for such a lease).
  ALTER TABLE placements ADD COLUMN lifecycle_id BLOB CHECK (lifecycle_id IS NULL OR length(lifecycle_id) = 16);
  `,
];
