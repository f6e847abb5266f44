import { isFredError } from "../../core/errors.ts";
import type { BackendClient } from "../backend-client/index.ts";
import { type LeaseRooms, onLostBackend } from "../store/index.ts";
import { refuse } from "./errors.ts";

/**
 * Which backend answers a tenant's read, from durable placement only (never guessed by
 * SKU routing, which could ask a machine that never held the lease and report it absent):
 * - "owner": a confirmed owner that is configured and not fenced; reads stay pinned to
 *   it even while a newer attempt is unresolved;
 * - "attempt": no confirmed owner, but an unresolved attempt: that backend may hold the
 *   lease; a positive answer from it is usable, its silence proves nothing;
 * - "none": no placement record: nothing is placed here now. A backend may still keep
 *   what is left of the lease (the diagnostics of a failed or closed lease), so reads of
 *   that kind search every backend we may ask (`searchBackends`): a search, not a
 *   selection — only a backend that holds the lease answers for it;
 * - "unresolved": a conflict, or a record naming a backend we cannot ask.
 */
export type BackendRoute =
  | { kind: "owner"; client: BackendClient }
  | { kind: "attempt"; client: BackendClient }
  | { kind: "none" }
  | { kind: "unresolved" };

/** Throws the 410 backend_storage_lost refusal for a lease on a lost backend. */
export function routeRead(
  rooms: LeaseRooms,
  clients: ReadonlyMap<string, BackendClient>,
  leaseUuid: string,
): BackendRoute {
  if (onLostBackend(rooms, leaseUuid)) throw refuse.storageLost();
  const { store } = rooms;
  const usable = (name: string | undefined) => {
    const client = name === undefined ? undefined : clients.get(name);
    return client === undefined || client.backend.fenced ? undefined : client;
  };
  const placement = store.placement(leaseUuid);
  if (placement?.state === "conflict") return { kind: "unresolved" };
  if (placement !== undefined) {
    const client = usable(placement.owner);
    return client === undefined ? { kind: "unresolved" } : { kind: "owner", client };
  }
  const attempt = store.attemptFor(leaseUuid);
  if (attempt === undefined) return { kind: "none" };
  const client = usable(attempt.backend);
  return client === undefined ? { kind: "unresolved" } : { kind: "attempt", client };
}

/** Every configured backend we may ask (not fenced), in configuration order. */
export function askableBackends(clients: ReadonlyMap<string, BackendClient>): BackendClient[] {
  return [...clients.values()].filter((c) => !c.backend.fenced);
}

/**
 * Asks every askable backend at once; the first (in configuration order) that holds the
 * lease answers. Undefined when every one reported 404; when none holds it and one
 * failed, that failure is thrown (a backend error is not a "not found").
 */
export async function searchBackends<T>(
  clients: ReadonlyMap<string, BackendClient>,
  read: (client: BackendClient) => Promise<T | undefined>,
): Promise<T | undefined> {
  const answers = await Promise.allSettled(askableBackends(clients).map(read));
  for (const a of answers) if (a.status === "fulfilled" && a.value !== undefined) return a.value;
  const failed = answers.find((a) => a.status === "rejected");
  if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  return undefined;
}

/**
 * Reads through the route: the owner; with no record at all, the first backend that
 * holds the lease; undefined when it is known that none does. An attempt or an
 * unresolved record is 503 (the attempted backend's silence proves nothing).
 */
export async function readRouted<T>(
  route: BackendRoute,
  clients: ReadonlyMap<string, BackendClient>,
  read: (client: BackendClient) => Promise<T | undefined>,
): Promise<T | undefined> {
  try {
    if (route.kind === "owner") return await read(route.client);
    if (route.kind === "none") return await searchBackends(clients, read);
  } catch (err) {
    throw backendReadFailure(err);
  }
  throw refuse.unavailable("ERR_API_PLACEMENT_UNRESOLVED");
}

/** The owner, or the 404/503 a read that needs one answers with. */
export function ownerOrRefuse(route: BackendRoute, notFound = "lease not yet provisioned"): BackendClient {
  if (route.kind === "owner") return route.client;
  if (route.kind === "none") throw refuse.notProvisioned(notFound);
  throw refuse.unavailable("ERR_API_PLACEMENT_UNRESOLVED");
}

/**
 * Maps a failed backend read: a backend we may not or cannot ask right now (fenced,
 * open circuit) is 503, an answer off the contract (a body that does not decode, a status
 * a read never gets) is 502,
 * anything else the backend did is 500. Its text stays in the log.
 */
export function backendReadFailure(err: unknown): Error {
  if (isFredError(err, "ERR_BACKEND_FENCED") || isFredError(err, "ERR_BACKEND_CIRCUIT_OPEN")) {
    return refuse.unavailable("ERR_API_BACKEND_UNAVAILABLE", err);
  }
  if (isFredError(err, "ERR_BACKEND_MALFORMED") || offContractStatus(err)) return refuse.badGateway(err);
  return refuse.backendRead(err);
}

/** A read answered with a status the contract does not give it (neither 200, 404 nor 5xx). */
function offContractStatus(err: unknown): boolean {
  if (!isFredError(err, "ERR_BACKEND_STATUS")) return false;
  const status = err.details?.status;
  return typeof status === "number" && status < 500;
}
