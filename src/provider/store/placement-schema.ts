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
  `
  -- The maintenance journal (src/provider/maintenance): one row per restart/update command,
  -- keyed by the tenant's Idempotency-Key within the lease (legacy tenants: "token:" plus
  -- the spent token's replay key). A row is committed before the backend hears of it and
  -- stays as the command's receipt once settled (the lease's newest 1,024 are kept).
  -- admitted_at_us is the stamp sent to the backend: strictly increasing per lease.
  -- payload is an update's pending desired state; it is dropped on settlement, its
  -- SHA-256 stays so a replay is still compared against the same bytes.
  CREATE TABLE maintenance (
    lease_uuid     TEXT NOT NULL,
    command_key    TEXT NOT NULL,
    maintenance_id TEXT NOT NULL,
    tenant         TEXT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('restart', 'update')),
    payload        BLOB,
    payload_sha256 TEXT,
    admitted_at_us INTEGER NOT NULL,
    backend        TEXT NOT NULL,
    lifecycle_id   TEXT NOT NULL,
    phase          TEXT NOT NULL CHECK (phase IN ('admitted', 'accepted', 'confirmed', 'settled')),
    outcome        TEXT CHECK (outcome IN ('succeeded', 'failed', 'refused', 'expired', 'ended')),
    answer_status  INTEGER,
    answer_error   TEXT,
    answer_reason  TEXT,
    content_bytes  INTEGER NOT NULL,
    settled_at     INTEGER,
    PRIMARY KEY (lease_uuid, command_key),
    UNIQUE (lease_uuid, maintenance_id),
    UNIQUE (lease_uuid, admitted_at_us),
    CHECK ((phase = 'settled') = (outcome IS NOT NULL))
  ) STRICT;
  -- The budget and the recovery pass read only unsettled commands.
  CREATE INDEX maintenance_unsettled ON maintenance (tenant) WHERE phase <> 'settled';
  `,
  `
  -- Retention: the owner soft-deleted the lease's data on close (a \`deprovisioned\`
  -- callback with retained: true). The row stays, owner and storage identity kept, so a
  -- restore can be routed to the backend holding the data. retention_misses counts
  -- consecutive complete sweeps whose identity-checked /retentions of the owner did not
  -- list the lease (two retire the row). restore_target names the lease an admitted
  -- restore adopts the data into, until that restore settles.
  ALTER TABLE placements ADD COLUMN retained_at INTEGER;
  ALTER TABLE placements ADD COLUMN retained_storage_id TEXT;
  ALTER TABLE placements ADD COLUMN retention_misses INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE placements ADD COLUMN restore_target BLOB
    CHECK (restore_target IS NULL OR length(restore_target) = 16);
  CREATE INDEX placements_restore_target ON placements (restore_target) WHERE restore_target IS NOT NULL;
  `,
  `
  -- A backend an operator retired as lost (its storage is gone for good). The pin stays
  -- while rows still name it: providerd answers its leases' reads 410, ends them on chain,
  -- and prunes each row once a fresh chain read shows its lease ended.
  ALTER TABLE backends ADD COLUMN lost_at INTEGER;
  `,
];
