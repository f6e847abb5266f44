/**
 * The HTTP surface of the backend contract: header names, routes, query parameter names
 * and the size limits both sides hold each other to. The kit registers its routes with
 * these builders and providerd's client calls the same builders, so a path exists once.
 */

/** Every backend response carries exactly one of these (the storage identity). */
export const STORAGE_HEADER = "x-fred-backend-storage-id";
/** `t=<unix seconds>,sha256=<hex>` on every signed request and every callback. */
export const SIGNATURE_HEADER = "x-fred-signature";

/** The mutating POSTs, served at `/{op}` and at `/_fred/storage/{storage-id}/{op}`. */
export const MUTATIONS = [
  "provision",
  "deprovision",
  "reconcile_custom_domain",
  "restart",
  "update",
  "restore",
] as const;
export type Mutation = (typeof MUTATIONS)[number];

/** The one status that means a backend took a mutation; any other answer is classified. */
export const MUTATION_ACCEPTED: Record<Mutation, number> = {
  provision: 202,
  deprovision: 200,
  reconcile_custom_domain: 204,
  restart: 202,
  update: 202,
  restore: 202,
};

/** `/{op}`, or the storage-pinned `/_fred/storage/{storageId}/{op}` (pass ":storageId" for a route). */
export function mutationPath(op: Mutation, storageId?: string): string {
  return storageId === undefined ? `/${op}` : `/_fred/storage/${storageId}/${op}`;
}

/** Per-lease reads: `/{read}/{uuid}` (pass ":uuid" for a route). */
export type LeaseRead = "info" | "provisions" | "releases" | "logs";
export function leasePath(read: LeaseRead, leaseUuid: string): string {
  return `/${read}/${leaseUuid}`;
}

export const PATHS = {
  health: "/health",
  stats: "/stats",
  metrics: "/metrics",
  /** Inventory: `?limit=&continue=` pages, or repeated `?lease_uuid=` filters. */
  provisions: "/provisions",
  retentions: "/retentions",
} as const;

/** Served without a signature (verifying there is optional for a backend). */
export const UNAUTHENTICATED_PATHS: ReadonlySet<string> = new Set([PATHS.health, PATHS.stats, PATHS.metrics]);

/** Query parameters. `backend_storage_id` rides on every request once the identity is pinned. */
export const QUERY = {
  storageId: "backend_storage_id",
  limit: "limit",
  continue: "continue",
  leaseUuid: "lease_uuid",
  tail: "tail",
} as const;

const MiB = 1024 * 1024;

export const LIMITS = {
  /** Largest page a backend serves; larger `limit`s are lowered to it. */
  maxPage: 5000,
  /** The page size providerd asks for. */
  inventoryPage: 1000,
  /** `lease_uuid` filters providerd sends in one lookup. */
  leaseFilters: 100,
  defaultTail: 100,
  maxTail: 10_000,
  /** Decoded payload (manifest) bytes. */
  payloadBytes: MiB,
} as const;

/** What providerd reads of each response at most (a longer body is refused, not truncated). */
export const RESPONSE_CAPS = {
  provision: 1 * MiB,
  mutation: 1 * MiB,
  info: 1 * MiB,
  provisionsPage: 8 * MiB,
  retentionsPage: 1 * MiB,
  logs: 16 * MiB,
  releases: 8 * MiB,
  stats: 1 * MiB,
  health: 64 * 1024,
} as const;
