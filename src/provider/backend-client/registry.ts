import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { ProviderConfig } from "../config/index.ts";
import { BackendClient } from "./client.ts";
import type { BackendCallObserver } from "./metrics.ts";

/**
 * One client per configured backend, pinned to the storage ID the placement store
 * recorded for it. A configured backend without a pin is refused: talking to it would
 * mean trusting whatever storage answers at that URL.
 */
export async function createBackendClients(
  config: ProviderConfig,
  pins: ReadonlyMap<string, string>,
  clock: Clock,
  observe?: BackendCallObserver,
): Promise<Map<string, BackendClient>> {
  const missing = config.backends.filter((b) => !pins.has(b.name)).map((b) => b.name);
  if (missing.length > 0) {
    throw new FredError(
      "ERR_BACKEND_NOT_PINNED",
      `backend(s) ${missing.join(", ")} have no pinned storage ID in the placement store`,
    );
  }
  const clients = new Map<string, BackendClient>();
  try {
    for (const backend of config.backends) {
      clients.set(
        backend.name,
        await BackendClient.create({
          backend,
          secret: backend.hmacSecret || config.callbackSecret,
          storageId: pins.get(backend.name),
          clock,
          ...(observe === undefined ? {} : { observe }),
        }),
      );
    }
  } catch (err) {
    await closeBackendClients(clients);
    throw err;
  }
  return clients;
}

export async function closeBackendClients(clients: ReadonlyMap<string, BackendClient>): Promise<void> {
  await Promise.all([...clients.values()].map((c) => c.close()));
}
