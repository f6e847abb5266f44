import type { Clock } from "../../core/clock.ts";
import type { FredError } from "../../core/errors.ts";
import { isLoopbackHost } from "../../core/host-port.ts";
import { BackendClient, type Inventory } from "../backend-client/index.ts";
import type { BackendConfig, ProviderConfig } from "../config/index.ts";

/**
 * How the offline placement tools (init, add-backend, repair --apply) read a backend's
 * complete inventory: the only evidence they may turn into durable records. Response
 * bodies are not authenticated by the request HMAC, so the transport must vouch for
 * them (verified HTTPS, or loopback for development), and a fenced backend is never read.
 */
export interface FleetReadDeps {
  clock: Clock;
  signal?: AbortSignal;
  /** Builds the client used to read a backend's inventory (tests may shorten timeouts). */
  clientFor?: (
    backend: BackendConfig,
    secret: string,
    storageId: string | undefined,
  ) => Promise<BackendClient>;
}

/**
 * Inventory-reading modes trust response bodies, so they need verified HTTPS unless on
 * loopback or a Unix socket (local by construction; its file mode decides who listens).
 */
export function inventoryTransportProblem(b: BackendConfig): string | undefined {
  if (b.scheme === "unix") return undefined;
  if (b.scheme === "https") {
    return b.tlsSkipVerify
      ? `backend ${b.name}: tls_skip_verify cannot vouch for inventory responses`
      : undefined;
  }
  return isLoopbackHost(b.host)
    ? undefined
    : `backend ${b.name}: plain HTTP is accepted only for loopback backends; use certificate-verified https://`;
}

/** The problems that stop any inventory-reading tool before it reads anything. */
export function fleetReadProblems(config: ProviderConfig): string[] {
  const fenced = config.backends.filter((b) => b.fenced).map((b) => b.name);
  const problems = fenced.length > 0 ? [`backend(s) ${fenced.join(", ")} are fenced`] : [];
  for (const b of config.backends) {
    const p = inventoryTransportProblem(b);
    if (p !== undefined) problems.push(p);
  }
  return problems;
}

/**
 * One backend's complete inventory. With `pin`, the backend must answer as that storage
 * identity; any failure (unreachable, wrong key, identity, partial walk) is refused.
 */
export async function readInventory(
  config: ProviderConfig,
  backend: BackendConfig,
  pin: string | undefined,
  deps: FleetReadDeps,
  refuse: (message: string) => FredError,
): Promise<Inventory> {
  const secret = backend.hmacSecret || config.callbackSecret;
  const client = deps.clientFor
    ? await deps.clientFor(backend, secret, pin)
    : await BackendClient.create({ backend, secret, storageId: pin, clock: deps.clock });
  let inventory: Inventory;
  try {
    inventory = await client.inventory(deps.signal);
  } catch (err) {
    throw refuse(`backend ${backend.name} did not answer complete inventories: ${(err as Error).message}`);
  } finally {
    await client.close();
  }
  if (pin !== undefined && inventory.storageId !== pin) {
    throw refuse(`backend ${backend.name} answers as storage ${inventory.storageId}, but its pin is ${pin}`);
  }
  return inventory;
}
