import type Docker from "dockerode";
import { KeyedMutex } from "../../core/async/index.ts";
import type { Logger } from "../../log.ts";
import { SubstrateError } from "../kit/index.ts";
import type { EgressFirewall } from "./egress-firewall.ts";
import { ambiguous, engineStatus, isNotFound } from "./engine.ts";
import { LABEL, tenantNetworkName } from "./names.ts";

/**
 * One bridge network per tenant, shared by all of that tenant's leases. Docker's
 * inter-bridge rules keep tenants apart while published ports stay reachable (an
 * `internal` network would block publishing). Creation and removal of a tenant's network
 * run under a per-tenant lock together with container creation, so a removal never races
 * a lease that is about to join the network.
 *
 * With an egress firewall, its rules follow the networks: `ensure` returns only once the
 * kernel holds the rules for the network (so no container joins an unfiltered one), and a
 * removal takes the network's rules out.
 */
export class TenantNetworks {
  readonly #docker: Docker;
  readonly #log: Logger;
  readonly #storageId: string;
  readonly #egress: Pick<EgressFirewall, "sync"> | undefined;
  readonly #locks = new KeyedMutex();

  constructor(docker: Docker, log: Logger, storageId: string, egress?: Pick<EgressFirewall, "sync">) {
    this.#docker = docker;
    this.#log = log;
    this.#storageId = storageId;
    this.#egress = egress;
  }

  /** Runs `work` exclusively for the tenant (FIFO). */
  withTenant<T>(tenant: string, work: () => Promise<T>): Promise<T> {
    return this.#locks.run(tenant, work);
  }

  /** Creates the tenant's network when missing; call inside `withTenant`. Returns its name. */
  async ensure(tenant: string, signal: AbortSignal): Promise<string> {
    const name = await this.#ensureNetwork(tenant, signal);
    try {
      await this.#egress?.sync(signal);
    } catch (err) {
      throw ambiguous(`egress rules for network ${name}`, err);
    }
    return name;
  }

  async #ensureNetwork(tenant: string, signal: AbortSignal): Promise<string> {
    const name = tenantNetworkName(tenant);
    try {
      const info = await this.#docker.getNetwork(name).inspect();
      if (info.Labels?.[LABEL.managed] !== "true" || info.Labels?.[LABEL.tenant] !== tenant) {
        throw ambiguous(`network ${name}`, new Error("a network of this name exists but is not ours"));
      }
      return name;
    } catch (err) {
      if (!isNotFound(err))
        throw err instanceof SubstrateError ? err : ambiguous(`inspect network ${name}`, err);
    }
    try {
      await this.#docker.createNetwork({
        Name: name,
        Driver: "bridge",
        CheckDuplicate: true,
        Labels: { [LABEL.managed]: "true", [LABEL.tenant]: tenant, [LABEL.storageId]: this.#storageId },
        abortSignal: signal,
      } as Docker.NetworkCreateOptions);
      this.#log.info({ network: name }, "tenant network created");
    } catch (err) {
      // 409: created concurrently by another lease's provision of the same tenant.
      if (engineStatus(err) !== 409) throw ambiguous(`create network ${name}`, err);
    }
    return name;
  }

  /**
   * Removes the tenant's network once no container of the tenant remains (any state);
   * call inside `withTenant`. A network that is not ours is left alone.
   */
  async removeIfUnused(tenant: string, signal: AbortSignal): Promise<void> {
    const name = tenantNetworkName(tenant);
    const users = await this.#docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`${LABEL.tenant}=${tenant}`] }),
      abortSignal: signal,
    } as Docker.ContainerListOptions);
    if (users.length > 0) return;
    try {
      const network = this.#docker.getNetwork(name);
      const info = await network.inspect();
      if (info.Labels?.[LABEL.managed] !== "true" || info.Labels?.[LABEL.storageId] !== this.#storageId)
        return;
      if (Object.keys(info.Containers ?? {}).length > 0) return;
      await network.remove({ abortSignal: signal });
      this.#log.info({ network: name }, "tenant network removed");
    } catch (err) {
      if (isNotFound(err) || engineStatus(err) === 409 || engineStatus(err) === 403) return;
      throw ambiguous(`remove network ${name}`, err);
    }
    // A left-over rule for a gone bridge filters nothing; the sweep retries the removal.
    await this.#egress
      ?.sync(signal)
      .catch((err) =>
        this.#log.warn({ network: name, err }, "egress rules not updated after a network removal"),
      );
  }
}
