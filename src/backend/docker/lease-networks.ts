import type Docker from "dockerode";
import { KeyedMutex } from "../../core/async/index.ts";
import type { Logger } from "../../log.ts";
import { SubstrateError } from "../kit/index.ts";
import type { EgressFirewall } from "./egress-firewall.ts";
import { ambiguous, definite, engineMessage, engineStatus, isNotFound } from "./engine.ts";
import { LABEL, leaseNetworkName } from "./names.ts";

/**
 * One bridge network per lease. A lease's services find each other there by service name
 * (their network aliases), and nothing else is on it: two leases, even of one tenant, never
 * share a bridge, so neither can reach the other's containers (Docker's inter-bridge rules)
 * nor answer for its service names. Published ports stay reachable (an `internal` network
 * would block publishing). Creation and removal of a lease's network run under a per-lease
 * lock together with container creation, so a removal never races the lease's next create.
 *
 * Each network takes one subnet from the engine's address pools (`default-address-pools`
 * in daemon.json): the engine's built-in pools hold about 30, so a host serving more
 * leases needs a larger pool (docs/docker-backend.md). An exhausted pool fails the
 * provision definitely, with the operator's fix in the log.
 *
 * With an egress firewall, its rules follow the networks: `ensure` returns only once the
 * kernel holds the rules for the network (so no container joins an unfiltered one), and a
 * removal takes the network's rules out.
 */
export class LeaseNetworks {
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

  /** Runs `work` exclusively for the lease's network (FIFO). */
  withLease<T>(leaseUuid: string, work: () => Promise<T>): Promise<T> {
    return this.#locks.run(leaseUuid, work);
  }

  /** Creates the lease's network when missing; call inside `withLease`. Returns its name. */
  async ensure(leaseUuid: string, tenant: string, signal: AbortSignal): Promise<string> {
    const name = await this.#ensureNetwork(leaseUuid, tenant, signal);
    try {
      await this.#egress?.sync(signal);
    } catch (err) {
      throw ambiguous(`egress rules for network ${name}`, err);
    }
    return name;
  }

  async #ensureNetwork(leaseUuid: string, tenant: string, signal: AbortSignal): Promise<string> {
    const name = leaseNetworkName(leaseUuid);
    try {
      const info = await this.#docker.getNetwork(name).inspect();
      if (info.Labels?.[LABEL.managed] !== "true" || info.Labels?.[LABEL.leaseUuid] !== leaseUuid) {
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
        Labels: {
          [LABEL.managed]: "true",
          [LABEL.leaseUuid]: leaseUuid,
          [LABEL.tenant]: tenant,
          [LABEL.storageId]: this.#storageId,
        },
        abortSignal: signal,
      } as Docker.NetworkCreateOptions);
      this.#log.info({ network: name, lease_uuid: leaseUuid }, "lease network created");
    } catch (err) {
      // 409: the same network, created by an earlier try of this provision.
      if (engineStatus(err) === 409) return name;
      if (/non-overlapping|address pool/i.test(engineMessage(err))) {
        this.#log.error(
          { network: name, err: engineMessage(err) },
          "the engine's address pools are exhausted: one network per lease needs room for as many subnets as leases (default-address-pools in daemon.json, e.g. base 10.200.0.0/14 size 26)",
        );
        throw definite("Internal", "internal error while provisioning", "address pool exhausted", err);
      }
      throw ambiguous(`create network ${name}`, err);
    }
    return name;
  }

  /**
   * Removes one of our networks once no container of any state names it: the lease's own,
   * or a tenant network an earlier version made (shared by that tenant's leases; it goes
   * with the last of them). A stopped container is not attached, but would fail to start
   * without its network, so it counts. A network that is not ours, or is gone, is left alone.
   */
  async removeIfUnused(name: string, signal: AbortSignal): Promise<void> {
    try {
      const users = await this.#docker.listContainers({
        all: true,
        filters: JSON.stringify({ network: [name] }),
        abortSignal: signal,
      } as Docker.ContainerListOptions);
      if (users.length > 0) return;
      const network = this.#docker.getNetwork(name);
      const info = await network.inspect();
      if (info.Labels?.[LABEL.managed] !== "true" || info.Labels?.[LABEL.storageId] !== this.#storageId)
        return;
      if (Object.keys(info.Containers ?? {}).length > 0) return;
      await network.remove({ abortSignal: signal });
      this.#log.info({ network: name }, "network removed");
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
