/**
 * Numbered, append-only schema migrations of the backend journal. Never edit a shipped
 * entry: add the next one. `PRAGMA user_version` records how many have run, and a
 * journal whose version is newer than this list is refused (it was written by newer code).
 */
export const MIGRATIONS: readonly string[] = [
  // 1: identity, lease heads, release history, tombstones, operation receipts, outbox.
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;

  -- One row per live lease. head = 'operation' | 'close' | 'none' is the single mutation
  -- head; phase = 'before_effects' | 'started' for an operation or close in progress.
  CREATE TABLE leases (
    lease_uuid    TEXT PRIMARY KEY,
    tenant        TEXT NOT NULL,
    provider_uuid TEXT NOT NULL,
    operation_id  TEXT NOT NULL,
    callback_url  TEXT NOT NULL,
    lifecycle_url TEXT NOT NULL,
    items         TEXT NOT NULL,
    instances     TEXT NOT NULL,
    payload       BLOB,
    payload_hash  TEXT,
    image         TEXT NOT NULL,
    release       INTEGER NOT NULL,
    head          TEXT NOT NULL,
    phase         TEXT,
    status        TEXT NOT NULL,
    fail_count    INTEGER NOT NULL DEFAULT 0,
    reason        TEXT,
    message       TEXT,
    created_at    INTEGER NOT NULL,
    admitted_at   INTEGER NOT NULL,
    generation    INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX leases_head ON leases(head) WHERE head <> 'none';

  CREATE TABLE releases (
    lease_uuid   TEXT NOT NULL,
    version      INTEGER NOT NULL,
    operation_id TEXT NOT NULL,
    image        TEXT NOT NULL,
    status       TEXT NOT NULL,
    manifest     BLOB,
    reason       TEXT,
    message      TEXT,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (lease_uuid, version)
  ) STRICT;

  -- Permanent: a closed lease UUID is never provisioned again.
  CREATE TABLE tombstones (
    lease_uuid TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL,
    closed_at  INTEGER NOT NULL
  ) STRICT;

  -- Compact replay fences: the outcome of each settled operation, so a redelivered
  -- provision with the same operation id is acknowledged without new work.
  CREATE TABLE receipts (
    lease_uuid   TEXT NOT NULL,
    operation_id TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    PRIMARY KEY (lease_uuid, operation_id)
  ) STRICT;

  -- The callback outbox. seq orders rows (per lease FIFO); body is the exact JSON sent.
  -- kind = 'operation' | 'close' (results: never coalesced) | 'lifecycle' (observation).
  CREATE TABLE outbox (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL,
    lease_uuid  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    url         TEXT NOT NULL,
    body        TEXT NOT NULL,
    storage_id  TEXT NOT NULL,
    created_at  INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX outbox_lease ON outbox(lease_uuid, seq);
  `,
  // 2: the last failure of each lease, kept after its workload and lease row are gone.
  `
  -- Tenant-safe text only (reason, curated message, the tenant's own container output);
  -- operator detail goes to the log. logs is a JSON object of bounded texts, NULL until
  -- captured. One row per lease, replaced by the next failure, deleted by a success or
  -- once older than diagnostics_max_age.
  CREATE TABLE diagnostics (
    lease_uuid    TEXT PRIMARY KEY,
    tenant        TEXT NOT NULL,
    provider_uuid TEXT NOT NULL,
    reason        TEXT NOT NULL,
    message       TEXT NOT NULL,
    fail_count    INTEGER NOT NULL,
    logs          TEXT,
    created_at    INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX diagnostics_age ON diagnostics(created_at);
  `,
  // 3: which lease each operation id belongs to, and what it asked for.
  `
  -- Permanent, like tombstones: an operation id names exactly one lease, for good, and a
  -- redelivery must ask for what was admitted. request_digest is a sha256 over the
  -- admitted tenant, provider, items and payload hash; NULL for operations admitted before
  -- this migration (the current one is then compared against its lease row instead).
  CREATE TABLE operations (
    operation_id   TEXT PRIMARY KEY,
    lease_uuid     TEXT NOT NULL,
    request_digest TEXT
  ) STRICT;
  INSERT OR IGNORE INTO operations (operation_id, lease_uuid) SELECT operation_id, lease_uuid FROM leases;
  INSERT OR IGNORE INTO operations (operation_id, lease_uuid) SELECT operation_id, lease_uuid FROM receipts;
  `,
  // 4: the consecutive-failure budget (terminal_budget), kept with the lease.
  `
  -- streak_failures/streak_started_at/streak_exhausted: the current streak of the tenant's
  -- own workload failures and the verdict recorded with the last one (see terminal-budget.ts).
  -- ready_since: since when the lease has been ready without interruption (NULL: not ready).
  ALTER TABLE leases ADD COLUMN streak_failures INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE leases ADD COLUMN streak_started_at INTEGER;
  ALTER TABLE leases ADD COLUMN streak_exhausted INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE leases ADD COLUMN ready_since INTEGER;
  -- Ready before this migration: admission is the earliest it can have become ready.
  UPDATE leases SET ready_since = admitted_at WHERE status = 'ready';
  `,
  // 5: retained data of closed leases (retain_on_close) and the restores that adopt it.
  `
  -- One row per closed lease whose data is (or is being) kept. status: 'closing' (the
  -- close decided to retain; copies being made), 'active' (retained, restorable),
  -- 'restoring' (claimed by the restore of dest_lease under dest_operation), 'reaping'
  -- (being destroyed: expired, evicted, or adopted by a committed restore). volumes: JSON
  -- [{name, service, index, bytes}] as the substrate measured them. fs_identity: the volume
  -- root's identity at retain time (the orphan pruner trusts only the same root).
  -- discard_lease: the last failed restore destination, whose adopted copy must go.
  CREATE TABLE retentions (
    lease_uuid    TEXT PRIMARY KEY,
    tenant        TEXT NOT NULL,
    provider_uuid TEXT NOT NULL,
    partition     TEXT NOT NULL DEFAULT '',
    items         TEXT NOT NULL,
    instances     TEXT NOT NULL,
    payload       BLOB,
    payload_hash  TEXT,
    image         TEXT NOT NULL,
    status        TEXT NOT NULL,
    volumes       TEXT NOT NULL DEFAULT '[]',
    retained_mb   INTEGER NOT NULL DEFAULT 0,
    fs_identity   TEXT,
    closed_at     INTEGER NOT NULL,
    retained_at   INTEGER,
    dest_lease    TEXT,
    dest_operation TEXT,
    reap_reason   TEXT,
    orphan_misses INTEGER NOT NULL DEFAULT 0,
    discard_lease TEXT,
    generation    INTEGER NOT NULL DEFAULT 1
  ) STRICT;
  CREATE INDEX retentions_tenant ON retentions(tenant, retained_at);
  CREATE UNIQUE INDEX retentions_dest ON retentions(dest_lease) WHERE dest_lease IS NOT NULL;
  `,
  // 6: restart/update commands (the maintenance journal) and which command made a release.
  `
  -- One row per admitted command, keyed by providerd's maintenance_id. phase = 'pending'
  -- (journaled, nothing done) | 'started' (the substrate may have been called) |
  -- 'settled' (outcome, reason, message final). seq orders a lease's commands; settled
  -- rows are its receipt window (the newest 1,024 are kept). digest is a sha256 over
  -- kind, lease, payload hash and admitted_key: a replay must ask for the same. admitted_at
  -- is providerd's stamp as sent (echoed on the callback); admitted_key the same instant
  -- in a fixed-width form that sorts by time. payload is the update's manifest while the
  -- command is unsettled (the release row keeps it after).
  CREATE TABLE maintenance (
    maintenance_id TEXT PRIMARY KEY,
    lease_uuid     TEXT NOT NULL,
    seq            INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    digest         TEXT NOT NULL,
    admitted_at    TEXT,
    admitted_key   TEXT,
    payload        BLOB,
    payload_hash   TEXT,
    image          TEXT NOT NULL,
    source_release INTEGER NOT NULL,
    target_release INTEGER NOT NULL,
    phase          TEXT NOT NULL,
    outcome        TEXT,
    reason         TEXT,
    message        TEXT,
    created_at     INTEGER NOT NULL,
    settled_at     INTEGER
  ) STRICT;
  CREATE UNIQUE INDEX maintenance_lease ON maintenance(lease_uuid, seq);
  -- The newest admitted_key a lease ever accepted: it never moves back, and outlives the
  -- receipts, so a late or replayed stamped command can never run again.
  CREATE TABLE maintenance_marks (
    lease_uuid TEXT PRIMARY KEY,
    high_water TEXT NOT NULL
  ) STRICT;
  ALTER TABLE releases ADD COLUMN maintenance_id TEXT;
  `,
  // 7: the images the Docker backend brought onto the host (image garbage collection).
  `
  -- One row per image ID a provision, restart or update made available (pulled or found):
  -- only these are ever collected. refs: JSON list of the manifest references that resolved
  -- to it. last_used: the last time a workload was created from it or a sweep found it in use.
  CREATE TABLE host_images (
    image_id   TEXT PRIMARY KEY,
    refs       TEXT NOT NULL DEFAULT '[]',
    first_seen INTEGER NOT NULL,
    last_used  INTEGER NOT NULL
  ) STRICT;
  -- Which lease release used which image: a release pinned to an image whose tag has since
  -- moved still protects it. Rows go with the image, or once the lease is gone everywhere.
  CREATE TABLE host_image_uses (
    image_id   TEXT NOT NULL,
    lease_uuid TEXT NOT NULL,
    release    INTEGER NOT NULL,
    PRIMARY KEY (image_id, lease_uuid, release)
  ) STRICT;
  CREATE INDEX host_image_uses_lease ON host_image_uses(lease_uuid);
  `,
  // 8: the images each release runs, pinned (issue #33).
  `
  -- JSON object: service name -> immutable image reference (repo digest name@sha256:..., or
  -- the image ID sha256:... for an image with no registry digest). NULL until the release's
  -- images are resolved, and for releases recorded before this migration.
  ALTER TABLE releases ADD COLUMN image_digest TEXT;
  `,
];
