// Over 500 lines: the one table of every error code (docs/errors.md mirrors it row for row).
/**
 * Every error code this codebase raises, in one place. `docs/errors.md` mirrors this
 * table row for row (test/core/error-codes.test.ts fails when they drift), so adding a
 * code means adding a row here and a row there.
 *
 * - `meaning`: one line, for operators reading a log.
 * - `retryable`: set when every place that raises the code gives the same answer; it is
 *   then the default of `FredError.retryable`. Absent: the raising site decides.
 * - `http`: the status the code becomes at an HTTP edge, for codes that reach one.
 */
export interface ErrorCodeInfo {
  readonly meaning: string;
  readonly retryable?: boolean;
  readonly http?: number;
}

export const ERROR_CODES = {
  // --- generic ---------------------------------------------------------------------------
  ERR_ABORTED: { meaning: "work was cancelled by shutdown or an abort signal", retryable: false },
  ERR_USAGE: {
    meaning: "a CLI command or argument is wrong; the message says what to change",
    retryable: false,
  },
  ERR_TENANT_API: {
    meaning:
      "a provider's tenant API refused a `fred lease` request or could not be reached; the message has its reason",
  },
  ERR_INVALID_ARGUMENT: {
    meaning: "a caller passed a value outside a function's contract",
    retryable: false,
  },
  ERR_BUSY: { meaning: "a bounded queue is full; try again later", retryable: true },
  ERR_SHUTTING_DOWN: { meaning: "the component is closed and takes no new work", retryable: false },
  ERR_SHUTDOWN_DRAIN_TIMEOUT: {
    meaning: "providerd's lease work did not drain within shutdown_timeout; the rest was aborted",
    retryable: false,
  },
  ERR_SHUTDOWN_RELEASE_TIMEOUT: {
    meaning: "providerd's resources did not close within shutdown_timeout; the rest was abandoned",
    retryable: false,
  },
  ERR_NOT_READY: {
    meaning: "providerd cannot apply this yet (starting, or stopping); try again later",
    retryable: true,
    http: 503,
  },
  ERR_FAILPOINT: { meaning: "FRED_FAILPOINTS names a crash point that does not exist", retryable: false },

  // --- decoding --------------------------------------------------------------------------
  ERR_JSON: { meaning: "a body is not valid JSON", retryable: false, http: 400 },
  ERR_JSON_DUPLICATE_KEY: { meaning: "a JSON object repeats a key", retryable: false, http: 400 },
  ERR_JSON_TOO_LARGE: { meaning: "a JSON document exceeds its size limit", retryable: false, http: 400 },
  ERR_BASE64: { meaning: "a value is not canonical standard base64, or is too large", retryable: false },
  ERR_HEX: { meaning: "a value is not hex of the expected length", retryable: false },
  ERR_DURATION: { meaning: "a duration string does not parse (e.g. 30s, 5m, 1h)", retryable: false },

  // --- configuration ---------------------------------------------------------------------
  ERR_CONFIG: { meaning: "a configuration value is refused; the message names it", retryable: false },
  ERR_CONFIG_INVALID: {
    meaning: "providerd's config has problems, all listed in the message",
    retryable: false,
  },
  ERR_CONFIG_READ: { meaning: "the config file cannot be read", retryable: false },

  // --- keys and keyring ------------------------------------------------------------------
  ERR_MNEMONIC: { meaning: "a BIP-39 mnemonic is invalid or derives no key", retryable: false },
  ERR_PRIVATE_KEY: { meaning: "bytes are not a valid secp256k1 private key", retryable: false },
  ERR_KEYRING_BACKEND: { meaning: "the keyring backend is unknown or unsupported", retryable: false },
  ERR_KEYRING_PASSPHRASE: {
    meaning: "the file keyring passphrase is missing, short or wrong",
    retryable: false,
  },
  ERR_KEY_NAME: { meaning: "a key name breaks the naming rule", retryable: false },
  ERR_KEY_EXISTS: { meaning: "a key with that name already exists", retryable: false },
  ERR_KEY_NOT_FOUND: { meaning: "no key with that name is in the keyring", retryable: false },
  ERR_KEY_FILE: {
    meaning: "a key file is unreadable or belongs to another name or backend",
    retryable: false,
  },
  ERR_PROVIDER_KEY_MISMATCH: {
    meaning: "the signing key's address is not provider_address",
    retryable: false,
  },

  // --- HMAC signatures (backend contract, callbacks) ---------------------------------------
  ERR_HMAC_MISSING: { meaning: "a signed request carries no signature header", retryable: false, http: 401 },
  ERR_HMAC_MALFORMED: {
    meaning: "the signature header is not t=<unix>,sha256=<hex>",
    retryable: false,
    http: 401,
  },
  ERR_HMAC_STALE: { meaning: "the signature timestamp is too old", retryable: false, http: 401 },
  ERR_HMAC_FUTURE: { meaning: "the signature timestamp is too far ahead", retryable: false, http: 401 },
  ERR_HMAC_MISMATCH: { meaning: "no configured secret produces the signature", retryable: false, http: 401 },
  ERR_HMAC_WEAK_SECRET: { meaning: "an HMAC secret is shorter than 32 bytes", retryable: false },

  // --- tenant tokens (ADR-036) -----------------------------------------------------------
  ERR_TOKEN_MALFORMED: { meaning: "a tenant token does not decode or lacks a field", retryable: false },
  ERR_TOKEN_EXPIRED: { meaning: "a tenant token is older than its maximum age", retryable: false },
  ERR_TOKEN_FROM_FUTURE: { meaning: "a tenant token is dated too far ahead", retryable: false },
  ERR_TOKEN_BAD_PUBKEY: {
    meaning: "a tenant token's public key is not a compressed secp256k1 key",
    retryable: false,
  },
  ERR_TOKEN_BAD_SIGNATURE: {
    meaning: "a tenant token's signature is malformed or does not verify",
    retryable: false,
  },
  ERR_TOKEN_TENANT_MISMATCH: {
    meaning: "a tenant token's key is not the tenant's address",
    retryable: false,
  },
  ERR_TOKEN_LEASE_MISMATCH: { meaning: "a tenant token names another lease", retryable: false },
  ERR_TOKEN_KEY: { meaning: "the replay tracker was given an empty token key", retryable: false },

  // --- chain client ----------------------------------------------------------------------
  ERR_CHAIN_UNAVAILABLE: { meaning: "the chain node did not answer", retryable: true },
  ERR_CHAIN_RPC_TIMEOUT: {
    meaning: "one request to the chain node did not answer within its deadline (10 s by default)",
    retryable: true,
  },
  ERR_CHAIN_READ_TIMEOUT: {
    meaning: "a read of one chain object (all its queries) did not finish within its caller's deadline",
    retryable: true,
  },
  ERR_CHAIN_QUERY: { meaning: "a chain query failed or paged without end" },
  ERR_CHAIN_NOT_FOUND: {
    meaning: "the chain has no such object (callers usually turn it into undefined)",
    retryable: false,
  },
  ERR_CHAIN_ACCOUNT_NOT_FOUND: {
    meaning: "the signing account does not exist on chain yet",
    retryable: false,
  },
  ERR_CHAIN_ID_MISMATCH: {
    meaning: "the node serves a different chain_id than configured",
    retryable: false,
  },
  ERR_CHAIN_NO_SIGNER: { meaning: "a transaction was asked of a read-only chain client", retryable: false },
  ERR_CHAIN_SIMULATE: { meaning: "gas simulation returned no usable estimate", retryable: false },
  ERR_CHAIN_SIMULATE_TIMEOUT: { meaning: "gas simulation did not finish in time", retryable: false },
  ERR_CHAIN_TX: {
    meaning: "a transaction failed outside the classified cases, or its response is unusable",
    retryable: false,
  },
  ERR_TX_FAILED: { meaning: "a transaction was included in a block with a non-zero code", retryable: false },
  ERR_TX_REJECTED: { meaning: "the node refused a transaction at CheckTx", retryable: false },
  ERR_TX_SIMULATION_REFUSED: {
    meaning: "the chain's simulation failed the transaction's message; nothing was broadcast",
    retryable: false,
  },
  ERR_TX_INSUFFICIENT_FEE: { meaning: "the node refused a transaction's fee at CheckTx", retryable: false },
  ERR_TX_GAS_ABOVE_MAX: { meaning: "the gas estimate exceeds max_gas_limit", retryable: false },
  ERR_TX_RETRIES_EXHAUSTED: {
    meaning: "a transaction could not be broadcast before its deadline",
    retryable: true,
  },
  ERR_TX_TIMEOUT: {
    meaning: "a broadcast transaction was not seen in a block in time; outcome unknown",
    retryable: true,
  },
  ERR_LEASE_NOT_FOUND: { meaning: "the chain has no lease with that UUID", retryable: false },
  ERR_LEASE_NOT_PENDING: {
    meaning: "acknowledge or reject asked of a lease that is not PENDING",
    retryable: false,
  },
  ERR_LEASE_NOT_ACTIVE: { meaning: "close asked of a lease that is not ACTIVE", retryable: false },
  ERR_LEASE_NOT_VISIBLE: { meaning: "a lease from an event is not readable on chain yet", retryable: true },

  // --- providerd: backends ---------------------------------------------------------------
  ERR_BACKEND_TRANSPORT: { meaning: "the request to a backend failed in transport", retryable: true },
  ERR_BACKEND_TIMEOUT: { meaning: "a backend did not answer in time", retryable: true },
  ERR_BACKEND_CIRCUIT_OPEN: {
    meaning: "a backend's circuit breaker is open; nothing was sent",
    retryable: true,
  },
  ERR_BACKEND_FENCED: { meaning: "the backend is fenced by config; nothing was sent", retryable: false },
  ERR_BACKEND_NOT_PINNED: {
    meaning: "a configured backend has no pinned storage ID in the placement store",
    retryable: false,
  },
  ERR_BACKEND_STORAGE_ID: {
    meaning: "a pinned backend storage ID is not a canonical UUIDv4",
    retryable: false,
  },
  ERR_BACKEND_IDENTITY: {
    meaning: "a backend answered without, or with another, storage identity",
    retryable: false,
  },
  ERR_BACKEND_STATUS: { meaning: "a backend read answered an unexpected status (retryable when 5xx)" },
  ERR_BACKEND_MALFORMED: {
    meaning: "a backend response does not decode, or its pages do not end",
    retryable: true,
  },
  ERR_BACKEND_TOO_LARGE: { meaning: "a backend response exceeds its size limit", retryable: true },
  ERR_BACKEND_QUERY: { meaning: "a backend lookup asked for too few or too many leases", retryable: false },
  ERR_BACKEND_UNSUPPORTED: {
    meaning: "a backend answered a read with 501 unsupported: it does not implement it",
    retryable: false,
  },
  ERR_RECONCILE_CHAIN_LISTING: {
    meaning: "a reconciler sweep could not list the provider's leases (nothing was acted on)",
    retryable: true,
  },
  ERR_RECONCILE_DEADLINE: {
    meaning: "a reconciler read (backend inventory, chain re-read) did not answer within its deadline",
    retryable: true,
  },
  ERR_HEALTH_PROBE_TIMEOUT: {
    meaning:
      "a /health or /readyz probe of the chain or a backend did not answer within 3 s (reported unhealthy)",
    retryable: true,
  },
  ERR_CONTROL_SOCKET: {
    meaning: "providerd's local control socket (fred providerd reconcile) could not be used",
    retryable: false,
  },
  ERR_CALLBACK_APPLY_TIMEOUT: {
    meaning: "a verified callback was not applied within its two-minute budget; the backend retries it",
    retryable: true,
    http: 503,
  },
  ERR_PROVISION_NOT_SENT: {
    meaning: "a provision reached no backend (connection refused, circuit open, fenced, unpinned)",
    retryable: true,
  },

  // --- providerd: stores -----------------------------------------------------------------
  ERR_STORE_OPEN: {
    meaning: "a store file or database cannot be inspected, created or opened",
    retryable: false,
  },
  ERR_STORE_UNREACHABLE: {
    meaning:
      "the PostgreSQL store cannot be reached (connection refused or timed out, authentication refused); retried",
    retryable: true,
  },
  ERR_NOT_LEADER: {
    meaning:
      "this providerd instance does not hold the leader lease (a standby, or a leader that lost it): only the leader writes",
    retryable: false,
  },
  ERR_STORE_MISSING: { meaning: "a store file that must exist does not", retryable: false },
  ERR_STORE_EXISTS: { meaning: "a store file that must not exist already does", retryable: false },
  ERR_STORE_UNSAFE: {
    meaning: "a store file is a symlink, hard-linked, not a regular file, or group/world accessible",
    retryable: false,
  },
  ERR_STORE_KIND: { meaning: "the file is another kind of store, or not a fred store", retryable: false },
  ERR_STORE_SCHEMA_NEWER: {
    meaning:
      "the database schema is newer than this code (a newer release wrote it): run that release, or restore the pre-upgrade snapshot",
    retryable: false,
  },
  ERR_STORE_SCHEMA_OLDER: {
    meaning: "a read-only open found a schema older than this code; start the daemon once to migrate",
    retryable: false,
  },
  ERR_PLACEMENT_PROVIDER: {
    meaning: "the placement store belongs to another provider, or the UUID is not canonical",
    retryable: false,
  },
  ERR_PLACEMENT_STORAGE_ID: {
    meaning: "a backend storage ID to pin is not a canonical UUIDv4",
    retryable: false,
  },
  ERR_PLACEMENT_UNKNOWN_BACKEND: {
    meaning: "the placement store has no pin for that backend",
    retryable: false,
  },
  ERR_PLACEMENT_ATTEMPT: {
    meaning: "a write-ahead attempt has a non-canonical lease or operation ID",
    retryable: false,
  },
  ERR_PLACEMENT_INIT_REFUSED: {
    meaning: "fred placement init refuses to create the store; the message says why",
    retryable: false,
  },
  ERR_PLACEMENT_MEMBERSHIP_REFUSED: {
    meaning: "fred placement add-backend or retire-backend refuses the change; the message says why",
    retryable: false,
  },
  ERR_PLACEMENT_REPAIR_REFUSED: {
    meaning: "fred placement repair --apply refuses to run; the message says why",
    retryable: false,
  },
  ERR_PLACEMENT_MIGRATE_REFUSED: {
    meaning:
      "fred placement migrate refuses to run (a target that is not empty, a source in use); the message says why",
    retryable: false,
  },
  ERR_PLACEMENT_MIGRATE_VERIFY: {
    meaning: "fred placement migrate read back a copy that differs from its source; nothing was kept",
    retryable: false,
  },
  ERR_PLACEMENT_RESTORED: {
    meaning:
      "the placement store is a restored backup or snapshot not yet attested; run fred placement repair --attest-restored-backup --apply",
    retryable: false,
  },
  ERR_SNAPSHOT: {
    meaning: "an online snapshot or pre-change backup of a store could not be written",
    retryable: false,
  },
  ERR_PAYLOAD_LEASE: { meaning: "a payload was stored under a non-canonical lease UUID", retryable: false },
  ERR_PAYLOAD_HASH_MISMATCH: {
    meaning: "a payload does not hash to the lease's meta_hash",
    retryable: false,
  },
  ERR_PAYLOAD_CONFLICT: { meaning: "a different payload is already stored for the lease", retryable: false },
  ERR_PAYLOAD_CORRUPTED: { meaning: "a stored payload fails its hash check", retryable: false },

  // --- backend kit -----------------------------------------------------------------------
  ERR_WIRE: {
    meaning: "a backend contract request body breaks the contract's rules",
    retryable: false,
    http: 400,
  },
  ERR_CALLBACK_ATTEMPT_TIMEOUT: {
    meaning: "one signed callback POST got no answer within the backend's client timeout; it is tried again",
    retryable: true,
  },
  ERR_CALLBACK_DELIVERY_TIMEOUT: {
    meaning:
      "a callback's tries did not deliver it within the delivery deadline; the replay loop sends it later",
    retryable: true,
  },
  ERR_CALLBACK_URL: { meaning: "a callback URL breaks the callback URL rules", retryable: false, http: 400 },
  ERR_IMAGE_REFERENCE: {
    meaning: "a manifest image reference breaks Docker's reference grammar",
    retryable: false,
  },
  ERR_CONTRACT_400: {
    meaning: "the backend refuses a malformed or invalid request",
    retryable: false,
    http: 400,
  },
  ERR_CONTRACT_403: {
    meaning: "the client certificate is not on the backend's allow list",
    retryable: false,
    http: 403,
  },
  ERR_CONTRACT_404: { meaning: "the backend has no such lease", retryable: false, http: 404 },
  ERR_CONTRACT_409: {
    meaning: "the request conflicts with the lease's state or storage identity",
    retryable: false,
    http: 409,
  },
  ERR_CONTRACT_422: {
    meaning: "the backend holds no retained data for the restore, or it does not fit the tier",
    retryable: false,
    http: 422,
  },
  ERR_CONTRACT_501: { meaning: "the backend does not implement the operation", retryable: false, http: 501 },
  ERR_CONTRACT_503: { meaning: "the backend lacks the resources right now", retryable: true, http: 503 },
  ERR_SUBSTRATE_FAILED: {
    meaning: "the substrate definitely failed; nothing is left running",
    retryable: false,
  },
  ERR_SUBSTRATE_AMBIGUOUS: { meaning: "the substrate may or may not have acted", retryable: true },
  ERR_SUBSTRATE_TIMEOUT: {
    meaning:
      "a substrate call the backend waits on (connection info, logs, custom domains) did not finish within its budget",
    retryable: true,
    http: 500,
  },
  ERR_SUBSTRATE_HEALTH_TIMEOUT: {
    meaning: "the substrate gave no health verdict within 3 s; GET /health answers unhealthy",
    retryable: true,
    http: 503,
  },
  ERR_JOURNAL_TOO_NEW: {
    meaning:
      "the journal's schema is newer than this code (a newer release wrote it): run that release, or restore the pre-upgrade copy",
    retryable: false,
  },
  ERR_STORAGE_ID_INVALID: { meaning: "a storage ID is not a canonical lowercase UUIDv4", retryable: false },
  ERR_STORAGE_MISSING: { meaning: "the journal file does not exist; initialize it first", retryable: false },
  ERR_STORAGE_UNBOUND: { meaning: "the journal is not bound to a storage identity", retryable: false },
  ERR_STORAGE_ALREADY_BOUND: {
    meaning: "initialize was asked of a journal that is already bound",
    retryable: false,
  },
  ERR_STORAGE_MISMATCH: {
    meaning: "the journal is bound to another storage ID than configured",
    retryable: false,
  },

  // --- Docker backend --------------------------------------------------------------------
  ERR_DOCKER_UNREACHABLE: { meaning: "the Docker engine does not answer at startup", retryable: false },
  ERR_INGRESS_PROXY: { meaning: "the ingress proxy's admin API refused a change or does not answer" },
  ERR_INGRESS_CONFLICT: {
    meaning: "the ingress proxy holds configuration this backend will not override (another on-demand ask)",
    retryable: false,
  },
  ERR_DOCKER_ENGINE_PING_TIMEOUT: { meaning: "the engine ping did not finish in time", retryable: true },
  ERR_DOCKER_ENGINE_INFO_TIMEOUT: {
    meaning: "reading the engine's info at startup did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_IMAGE_PULL_TIMEOUT: { meaning: "an image pull did not finish in time", retryable: true },
  ERR_DOCKER_IMAGE_INSPECT_TIMEOUT: { meaning: "an image inspect did not finish in time", retryable: true },
  ERR_DOCKER_IMAGE_GC_TIMEOUT: {
    meaning: "an engine call of the image collection sweep did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_CONTAINER_CREATE_TIMEOUT: {
    meaning: "a container create did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_CONTAINER_START_TIMEOUT: {
    meaning: "a container start did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_CONTAINER_STOP_TIMEOUT: { meaning: "a container stop did not finish in time", retryable: true },
  ERR_DOCKER_CONTAINER_REMOVE_TIMEOUT: {
    meaning: "a container remove did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_CONTAINER_RENAME_TIMEOUT: {
    meaning: "a container rename did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_CONTAINER_LOGS_TIMEOUT: {
    meaning: "reading a failed release's container logs did not finish in time (kept without them)",
    retryable: true,
  },
  ERR_DOCKER_CONTAINER_LIST_TIMEOUT: {
    meaning: "listing the backend's containers after an engine reconnect did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_VOLUME_SEED_TIMEOUT: {
    meaning: "seeding a volume from its image did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_VOLUME_OWNER_TIMEOUT: {
    meaning: "reading the image's volume owner did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_SEED_HELPER_CREATE_TIMEOUT: {
    meaning: "creating the seed helper container did not finish in time",
    retryable: true,
  },
  ERR_DOCKER_SEED_HELPER_REMOVE_TIMEOUT: {
    meaning: "removing the seed helper container did not finish in time",
    retryable: true,
  },
  ERR_VOLUME_FILESYSTEM: { meaning: "volume_data_path is not btrfs with quotas enabled", retryable: false },
  ERR_VOLUME_FOREIGN: {
    meaning: "a volume exists but belongs to another lease or deployment",
    retryable: false,
  },
  ERR_VOLUME_DELETE_PENDING: {
    meaning: "an earlier deletion of the volume began and has not finished; a close completes it",
    retryable: true,
  },
  ERR_BTRFS: { meaning: "a btrfs command failed", retryable: false },
  ERR_EGRESS_FIREWALL: {
    meaning:
      "the tenant egress rules could not be installed (no nft, no permission, or the kernel refused them)",
  },
  ERR_EGRESS_NFT_TIMEOUT: {
    meaning: "an nft call for the egress rules did not finish in time",
    retryable: true,
  },
  ERR_USERNS: {
    meaning:
      "the engine's user-namespace remapping is missing in production_mode, or its id ranges cannot be read",
    retryable: false,
  },
  ERR_USERNS_UNMAPPED: {
    meaning: "a container uid or gid lies outside the engine's user-namespace map",
    retryable: false,
  },

  // --- providerd: tenant API ------------------------------------------------------------
  ERR_API_BAD_LEASE_UUID: {
    meaning: "a tenant request's lease UUID is not canonical",
    retryable: false,
    http: 400,
  },
  ERR_API_UNAUTHORIZED: {
    meaning: "a tenant token is missing, invalid, expired, replayed or for another lease",
    retryable: false,
    http: 401,
  },
  ERR_API_FORBIDDEN: {
    meaning: "the lease belongs to another tenant or provider",
    retryable: false,
    http: 403,
  },
  ERR_API_LEASE_NOT_FOUND: {
    meaning: "the chain has no such lease, or not in the state the endpoint needs",
    retryable: false,
    http: 404,
  },
  ERR_API_BACKEND_STORAGE_LOST: {
    meaning: "the lease's backend was retired as lost (retire-backend --lost); the lease is ended on chain",
    retryable: false,
    http: 410,
  },
  ERR_API_NOT_PROVISIONED: {
    meaning: "the lease is not provisioned on its backend",
    retryable: false,
    http: 404,
  },
  ERR_API_BAD_QUERY: {
    meaning: "a tenant request's query parameter is malformed or repeated",
    retryable: false,
    http: 400,
  },
  ERR_API_BAD_TAIL: {
    meaning: "the logs tail is not an integer from 1 to 10000",
    retryable: false,
    http: 400,
  },
  ERR_API_BAD_PAYLOAD: {
    meaning: "an upload is refused: billing-only lease, no meta_hash, empty, too large or wrong hash",
    retryable: false,
    http: 400,
  },
  ERR_API_PAYLOAD_NOT_STORED: {
    meaning: "an upload was not stored: already stored, no payload store, or the write failed",
    retryable: false,
    http: 409,
  },
  ERR_API_RATE_LIMITED: {
    meaning: "a tenant's request budget is spent; retry after Retry-After",
    retryable: true,
    http: 429,
  },
  ERR_API_CHAIN_READ: { meaning: "the chain read of a tenant's lease failed", retryable: true, http: 500 },
  ERR_API_BACKEND_READ: {
    meaning: "the lease's backend answered a tenant read with an error or an unreadable body",
    http: 500,
  },
  ERR_API_BACKEND_BAD_GATEWAY: {
    meaning:
      "the lease's backend answered a tenant read off its contract (an unreadable or off-shape body); none of its text is relayed",
    retryable: true,
    http: 502,
  },
  ERR_API_REPLAY_STORE: {
    meaning: "the token replay store cannot answer; the request is refused",
    retryable: true,
    http: 503,
  },
  ERR_API_CHAIN_BUSY: {
    meaning: "too many tenant chain reads are waiting; retry shortly",
    retryable: true,
    http: 503,
  },
  ERR_API_PLACEMENT_UNRESOLVED: {
    meaning: "the lease's placement is unresolved or names a backend that cannot be asked",
    retryable: true,
    http: 503,
  },
  ERR_API_BACKEND_UNAVAILABLE: {
    meaning: "the lease's backend is fenced or its circuit is open",
    retryable: true,
    http: 503,
  },
  ERR_API_LOGS_BUSY: { meaning: "log read capacity is exhausted; retry shortly", retryable: true, http: 503 },
  ERR_API_LOG_FOLLOW_FULL: {
    meaning: "too many log streams are open for the lease or the provider; retry shortly",
    retryable: true,
    http: 503,
  },
  ERR_API_LOG_FOLLOW_UNSUPPORTED: {
    meaning: "the lease's backend cannot stream logs (it answered 501); read the tail instead",
    retryable: false,
    http: 501,
  },
  ERR_API_BAD_RESTORE: {
    meaning:
      "a restore is refused as malformed: bad or equal from_lease_uuid, billing-only target, or items that do not match the retained set",
    retryable: false,
    http: 400,
  },
  ERR_API_RESTORE_CONFLICT: {
    meaning: "a restore is refused: source or target busy, target not PENDING, or not in a restorable state",
    retryable: false,
    http: 409,
  },
  ERR_API_RESTORE_TIER: {
    meaning: "a restore onto a smaller tier is refused: the retained data exceeds its disk_mb",
    retryable: false,
    http: 422,
  },
  ERR_API_RESTORE_AMBIGUOUS: {
    meaning: "the backend's answer to a restore proves nothing; the target attempt is kept",
    http: 500,
  },
  ERR_API_RESTORE_BAD_GATEWAY: {
    meaning: "the backend refused a restore with an off-contract error body; the target attempt is kept",
    retryable: false,
    http: 502,
  },
  ERR_API_RESTORE_UNAVAILABLE: {
    meaning:
      "a restore cannot be admitted now: source placement unresolved, backend unknown or unreachable, chain read failed, or no capacity",
    retryable: true,
    http: 503,
  },
  ERR_API_TIMEOUT: {
    meaning: "a tenant request did not finish within its deadline",
    retryable: true,
    http: 503,
  },
  ERR_API_BAD_IDEMPOTENCY_KEY: {
    meaning: "a restart/update's Idempotency-Key is missing, repeated or not a canonical UUIDv4",
    retryable: false,
    http: 400,
  },
  ERR_API_BAD_UPDATE: {
    meaning: "an update's body, payload or manifest is invalid",
    retryable: false,
    http: 400,
  },
  ERR_API_MAINTENANCE_REFUSED: {
    meaning: "the backend definitely refused a restart/update (its answer is kept for exact retries)",
  },
  ERR_API_MAINTENANCE_CONFLICT: {
    meaning:
      "a restart/update conflicts: key reused for another command, another command pending, lease busy or not ACTIVE, or the update failed",
    retryable: false,
    http: 409,
  },
  ERR_API_MAINTENANCE_EXPIRED: {
    meaning: "the command is older than the lease's retained maintenance history and did not run",
    retryable: false,
    http: 410,
  },
  ERR_API_MAINTENANCE_RESERVED: {
    meaning: "the shared maintenance budget's reserve is kept for a tenant without pending work",
    retryable: true,
    http: 429,
  },
  ERR_API_MAINTENANCE_FULL: {
    meaning: "the shared maintenance budget is exhausted; nothing was recorded",
    retryable: true,
    http: 503,
  },
  ERR_API_MAINTENANCE_PENDING: {
    meaning: "a restart/update is recorded but its dispatch is blocked or uncertain; recovery retries it",
    retryable: true,
    http: 503,
  },
  ERR_API_MAINTENANCE_RECORD: {
    meaning: "the backend accepted a restart/update but its acceptance is not yet durably recorded",
    retryable: true,
    http: 500,
  },
  ERR_API_MAINTENANCE_UNAVAILABLE: {
    meaning: "restart/update cannot be served now (no payload store, journal unwritable)",
    retryable: true,
    http: 503,
  },
  ERR_API_USAGE_UNSUPPORTED: {
    meaning: "the lease's backend does not sample usage (it answered 501 unsupported)",
    retryable: false,
    http: 501,
  },
  ERR_API_SHELL_DISABLED: {
    meaning: "the provider turned tenant shells off (tenant_shell_enabled: false)",
    retryable: false,
    http: 403,
  },
  ERR_API_SHELL_UNKNOWN_TARGET: {
    meaning: "a shell session names a service or instance the lease does not have",
    retryable: false,
    http: 404,
  },
  ERR_API_SHELL_NOT_READY: {
    meaning: "a shell session was asked for a lease whose workload is not ready",
    retryable: true,
    http: 409,
  },
  ERR_API_SHELL_LEASE_LIMIT: {
    meaning: "the lease already has its maximum of open shell sessions",
    retryable: true,
    http: 429,
  },
  ERR_API_SHELL_BUSY: {
    meaning: "the provider already has its maximum of open shell sessions",
    retryable: true,
    http: 503,
  },
  ERR_API_SHELL_UNSUPPORTED: {
    meaning: "the lease's backend does not implement shell sessions",
    retryable: false,
    http: 501,
  },

  // --- devnet and fred up ----------------------------------------------------------------
  ERR_DEVNET_CONFIG: { meaning: "a devnet option (gas price, tenant count) is invalid", retryable: false },
  ERR_DEVNET_HOME: { meaning: "the devnet home has no keys file, or it is not one", retryable: false },
  ERR_DEVNET_LOCKED: { meaning: "another process uses the devnet home", retryable: false },
  ERR_DEVNET_SCHEMA: { meaning: "the devnet database schema is newer than this code", retryable: false },
  ERR_UP_ORDER: {
    meaning: "a fred up component needs a fact an earlier one did not provide",
    retryable: false,
  },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * Machine codes in backend HTTP error bodies (`code` and `validation_code`), which
 * travel between processes and so are part of the contract, not FredError codes.
 */
export const BACKEND_BODY_CODES = {
  insufficient_resources: { meaning: "503: not enough capacity for the request now", field: "code" },
  already_provisioned: { meaning: "409: the lease is already provisioned", field: "code" },
  storage_identity_mismatch: {
    meaning: "409: the request names another backend storage identity",
    field: "code",
  },
  client_certificate_not_allowed: { meaning: "403: the client certificate is not allowed", field: "code" },
  unsupported: { meaning: "501: the backend does not implement the operation", field: "code" },
  not_ready: { meaning: "409: the lease is not ready, so no shell can start in it", field: "code" },
  unknown_target: {
    meaning: "404: a shell session names a service or instance the lease does not have",
    field: "code",
  },
  maintenance_expired: {
    meaning: "409: a restart or update not newer than the lease's newest one, with no receipt left; not run",
    field: "code",
  },
  demote_exceeds_tier: {
    meaning: "422: the retained data exceeds the smaller tier a restore asks for",
    field: "code",
  },
  unknown_sku: {
    meaning: "400: the request names a SKU the backend does not serve",
    field: "validation_code",
  },
  invalid_manifest: { meaning: "400: the payload is not a valid manifest", field: "validation_code" },
  image_not_allowed: {
    meaning: "400: the manifest names an image the backend refuses",
    field: "validation_code",
  },
} as const satisfies Record<string, { meaning: string; field: "code" | "validation_code" }>;

export type BackendBodyCode = keyof typeof BACKEND_BODY_CODES;

/** The default retryability of `code`: the table's fixed answer, else false. */
export function defaultRetryable(code: ErrorCode): boolean {
  const info: ErrorCodeInfo = ERROR_CODES[code];
  return info.retryable ?? false;
}
