// Over 500 lines: the Substrate contract for Docker in one class (provision, maintenance, retention, inventory); its parts delegate to the modules beside it.
import { setMaxListeners } from "node:events";
import type Docker from "dockerode";
import type { Registry } from "prom-client";
import type { LogEvent } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import { isFredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import {
  type ConnectionInfo,
  type DestroyRefusal,
  destroysRefused,
  type ExecRequest,
  type ExecSession,
  type InstanceSample,
  type InstanceSpec,
  type LeaseItem,
  type RetainedInventory,
  type RetainedSet,
  type RetainedVolume,
  type RuntimeEvent,
  type Substrate,
  SubstrateError,
  type WorkloadObservation,
  type WorkloadSpec,
} from "../kit/index.ts";
import type { BtrfsVolumes } from "./btrfs-volumes.ts";
import type { DockerBackendConfig } from "./config.ts";
import { buildContainerSpec } from "./container-spec.ts";
import { DeathReports } from "./death-reports.ts";
import { DockerMetrics, exitReason } from "./docker-metrics.ts";
import type { EgressFirewall } from "./egress-firewall.ts";
import {
  ambiguous,
  cleanupTrouble,
  definite,
  engineMessage,
  engineStatus,
  isNotFound,
  withPhase,
} from "./engine.ts";
import type { ContainerDeath, EventSupervisor } from "./event-supervisor.ts";
import { dockerExec } from "./exec.ts";
import { ImageGate, ImageLedger } from "./image-gc/index.ts";
import { ensurePinned, type ImageDeps, type ImageFacts, PullMetrics, resolveImage } from "./images.ts";
import { type Ingress, leaseRoutes, withFqdns } from "./ingress/index.ts";
import { InstanceVolumes } from "./instance-volumes.ts";
import { LeaseNetworks } from "./lease-networks.ts";
import { followContainerLogs } from "./log-follow.ts";
import { applyLogBudget, demuxLogStream, LOG_UNAVAILABLE } from "./logs.ts";
import {
  type MaintenanceDeps,
  type OwnedContainer,
  restartWorkload,
  updateWorkload,
} from "./maintenance/index.ts";
import { instanceKey, LABEL, leaseNetworkName, legacyTenantNetworkName } from "./names.ts";
import { type ContainerRow, connectionInfo, groupByLease, observeLease, servingRows } from "./observe.ts";
import { RetainedVolumes } from "./retention/retained-volumes.ts";
import { type ServiceModel, serviceModels } from "./service-model.ts";
import { startAndVerify } from "./startup.ts";
import { DockerUsageSampler } from "./usage-sampler.ts";
import type { IdShift } from "./userns.ts";
import type { SeedLimits, VolumeSeeder } from "./volume-seed.ts";

/**
 * The Docker substrate: the kit's `Substrate` on a real engine. Every resource carries
 * `fred.*` labels naming lease, storage id, operation and release; lookups go by label,
 * and before anything is stopped or removed it is re-inspected and its labels compared
 * with what we mean to act on (stale-handle safety). A mismatch is left alone, logged
 * and counted in `staleHandles`.
 */

export interface DockerSubstrateOptions {
  config: DockerBackendConfig;
  storageId: string;
  docker: Docker;
  clock: Clock;
  log: Logger;
  /** Absent when `volume_filesystem: none` (no durable disk is offered). */
  volumes: BtrfsVolumes | undefined;
  /** The engine's user-namespace map (userns.ts); the same one `volumes` chowns with. */
  ids: IdShift;
  /**
   * Caps on seeding a fresh volume from the image: bytes default to the SKU's `disk_mb`,
   * entries to 100,000.
   */
  seedLimits?: Partial<SeedLimits>;
  /** HTTPS hostnames through Caddy: routes follow the ready path and every removal. */
  ingress?: Ingress;
  /** The egress policy's kernel rules: they follow tenant networks as they come and go. */
  egress?: EgressFirewall;
  /** The backend's metrics registry (image pull duration and failures). */
  metricsRegistry?: Registry;
}

const INVALID_MANIFEST = "invalid_manifest" as const;
const CLEANUP_FAILED_MESSAGE = "the lease's containers could not be removed yet; the provider retries";
const VOLUME_DELETION_MESSAGE =
  "the lease's volume is still being deleted; the close completes when the deletion does";

export class DockerSubstrate implements Substrate {
  readonly kind = "docker";
  readonly #config: DockerBackendConfig;
  readonly #storageId: string;
  readonly #docker: Docker;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #volumes: BtrfsVolumes | undefined;
  readonly #instanceVolumes: InstanceVolumes;
  /** Retained data (btrfs snapshots); absent without a volume root. */
  readonly retained: RetainedVolumes | undefined;
  readonly #networks: LeaseNetworks;
  readonly #egress: Pick<EgressFirewall, "problem"> | undefined;
  readonly #ingress: Ingress | undefined;
  /** Leases under our own create/start/stop/destroy: their deaths are expected. */
  readonly #busy = new Map<string, number>();
  readonly #deaths: DeathReports;
  readonly #raisedSignals = new WeakSet<AbortSignal>();
  readonly #maintenance: MaintenanceDeps;
  readonly #images: ImageDeps;
  readonly #metrics: DockerMetrics;
  readonly #destroyRefused: (reason: DestroyRefusal) => void;
  /** Resources found under a lease's name or label that were not ours to touch. */
  staleHandles = 0;
  /** The images this backend brought onto the host (image-gc/), and the gate that keeps their removal apart from creates. */
  readonly imageLedger = new ImageLedger();
  readonly imageGate = new ImageGate();
  readonly #usage: DockerUsageSampler;

  constructor(opts: DockerSubstrateOptions) {
    this.#config = opts.config;
    this.#storageId = opts.storageId;
    this.#docker = opts.docker;
    this.#clock = opts.clock;
    this.#log = opts.log.child({ substrate: "docker" });
    this.#volumes = opts.volumes;
    this.#usage = new DockerUsageSampler({
      docker: opts.docker,
      storageId: opts.storageId,
      volumeRoot: opts.volumes?.root,
    });
    this.#ingress = opts.ingress;
    this.#networks = new LeaseNetworks(opts.docker, this.#log, opts.storageId, opts.egress);
    this.#egress = opts.egress;
    this.#images = {
      docker: opts.docker,
      clock: opts.clock,
      log: this.#log,
      pullTimeoutMs: opts.config.imagePullTimeoutMs,
      metrics: new PullMetrics(opts.metricsRegistry),
    };
    this.#metrics = new DockerMetrics(opts.metricsRegistry);
    this.#destroyRefused = destroysRefused(opts.metricsRegistry);
    this.retained = opts.volumes ? new RetainedVolumes(opts.volumes, opts.storageId) : undefined;
    this.#instanceVolumes = new InstanceVolumes({
      docker: opts.docker,
      clock: opts.clock,
      log: this.#log,
      config: opts.config,
      storageId: opts.storageId,
      volumes: opts.volumes,
      ids: opts.ids,
      seedLimits: opts.seedLimits ?? {},
      reportForeign: (name, lease) =>
        this.#reportStale(name, lease, {}, "a same-named volume belongs to another owner"),
    });
    this.#deaths = new DeathReports({
      docker: opts.docker,
      clock: opts.clock,
      log: this.#log,
      storageId: opts.storageId,
      isBusy: (lease) => this.#busy.has(lease),
      listOurs: (signal) => this.#list(signal),
      onExit: (death) => this.#countExit(death),
    });
    this.#maintenance = {
      docker: opts.docker,
      clock: opts.clock,
      log: this.#log,
      renameTimeoutMs: opts.config.containerCreateTimeoutMs,
      owned: (lease, signal) => this.#owned(lease, signal),
      create: (spec, signal) => this.create(spec, signal),
      start: (spec, signal, o) => this.#startChecked(spec, signal, o.startStopped, o.replacing),
      ensureImages: async (spec, signal) => {
        await this.#ensureImages(spec, this.#models(spec), signal);
      },
      stopContainer: (id, signal) => this.#stopContainer(id, signal),
      removeContainer: (id, signal) => this.#removeContainer(id, signal),
    };
  }

  get supervisor(): EventSupervisor | undefined {
    return this.#deaths.supervisor;
  }

  /**
   * The kit passes one long-lived signal to every concurrent call; each in-flight engine
   * request listens on it, so a burst of leases legitimately exceeds Node's default of 10.
   */
  #shareable(signal: AbortSignal): void {
    if (this.#raisedSignals.has(signal)) return;
    this.#raisedSignals.add(signal);
    setMaxListeners(10_000, signal);
  }

  async #during<T>(lease: string, work: () => Promise<T>): Promise<T> {
    this.#busy.set(lease, (this.#busy.get(lease) ?? 0) + 1);
    try {
      return await work();
    } finally {
      const left = (this.#busy.get(lease) ?? 1) - 1;
      if (left <= 0) this.#busy.delete(lease);
      else this.#busy.set(lease, left);
    }
  }

  #models(spec: WorkloadSpec): ServiceModel[] {
    if (!spec.manifest) {
      throw new SubstrateError("definite", "Internal", "a manifest is required to run containers", {
        validationCode: INVALID_MANIFEST,
      });
    }
    return serviceModels(spec.manifest);
  }

  async validate(spec: WorkloadSpec): Promise<void> {
    const models = this.#models(spec);
    const names = new Set(models.map((m) => m.name));
    for (const instance of spec.instances) {
      if (!names.has(instance.service)) {
        throw new SubstrateError(
          "definite",
          "Internal",
          `lease item ${instance.service} has no manifest service`,
          {
            validationCode: INVALID_MANIFEST,
          },
        );
      }
    }
  }

  /** A workload's container ended on its own: why, from the engine's record of it (OOM flag). */
  #countExit(death: ContainerDeath): void {
    // Counting only: an inspect that fails still counts the exit, by its code alone.
    void this.#docker
      .getContainer(death.containerId)
      .inspect()
      .then(
        (info) => exitReason(info.State?.OOMKilled === true, death.exitCode),
        () => exitReason(false, death.exitCode),
      )
      .then((reason) => this.#metrics.containerExit(reason));
  }

  /** Our containers of one lease (or all leases), by label. */
  async #list(signal: AbortSignal, lease?: string): Promise<ContainerRow[]> {
    this.#shareable(signal);
    const label = [`${LABEL.managed}=true`, `${LABEL.storageId}=${this.#storageId}`];
    if (lease) label.push(`${LABEL.leaseUuid}=${lease}`);
    try {
      return await this.#docker.listContainers({
        all: true,
        filters: JSON.stringify({ label }),
        abortSignal: signal,
      } as Docker.ContainerListOptions);
    } catch (err) {
      throw ambiguous("list containers", err);
    }
  }

  async create(spec: WorkloadSpec, signal: AbortSignal): Promise<void> {
    this.#shareable(signal);
    await this.#during(spec.leaseUuid, async () => {
      using _creating = await this.imageGate.creating();
      const models = this.#models(spec);
      const byName = new Map(models.map((m) => [m.name, m]));
      const now = () => this.#clock.now();
      const images = await this.#metrics.timed("pull", now, () => this.#ensureImages(spec, models, signal));
      const seeder = this.#instanceVolumes.seeder(spec);
      let done = false;
      try {
        await this.#metrics.timed("create", now, () =>
          this.#createInstances(spec, byName, images, seeder, signal),
        );
        done = true;
      } finally {
        // A helper left behind after a success would block startup: that is ambiguous.
        await seeder.close(signal).catch((err) => {
          if (done) throw err;
        });
      }
    });
  }

  /**
   * The seam's image pinning: each service's reference resolved per image_pull_policy
   * (`always` pulls, within image_pull_timeout) and pinned to the digest it resolved to.
   * A service's `credentials` authenticate only the pull of its own image.
   */
  async resolveImages(spec: WorkloadSpec, signal: AbortSignal): Promise<Record<string, string>> {
    this.#shareable(signal);
    const pins: Record<string, string> = {};
    const byRef = new Map<string, string>();
    for (const model of this.#models(spec)) {
      const key = `${model.image}\u0000${model.credentials?.host ?? ""}`;
      let pinned = byRef.get(key);
      if (pinned === undefined) {
        const facts = await resolveImage(this.#images, {
          ref: model.image,
          policy: this.#config.imagePullPolicy,
          auth: model.credentials,
          signal,
        });
        pinned = facts.pinned;
        byRef.set(key, pinned);
      }
      pins[model.name] = pinned;
    }
    return pins;
  }

  /**
   * Each service's image present, with its facts, by service name: the release's pinned
   * image when the spec carries one (pulled by digest only if the host lost it), else the
   * manifest's reference as found on the host (a release recorded before pins existed
   * keeps running what the host has; it is never moved to a newer tag here).
   */
  async #ensureImages(
    spec: WorkloadSpec,
    models: readonly ServiceModel[],
    signal: AbortSignal,
  ): Promise<Map<string, ImageFacts>> {
    const images = new Map<string, ImageFacts>();
    for (const model of models) {
      const pinned = spec.images?.[model.name];
      const facts =
        pinned !== undefined
          ? await ensurePinned(this.#images, { pinned, auth: model.credentials, signal })
          : await resolveImage(this.#images, {
              ref: model.image,
              policy: "if-not-present",
              auth: model.credentials,
              signal,
            });
      this.#recordImageUse(facts.id, model.image, spec);
      images.set(model.name, facts);
    }
    return images;
  }

  /** A ledger write that fails leaves the image unrecorded: never collected, never lost. */
  #recordImageUse(id: string, ref: string, spec: WorkloadSpec): void {
    try {
      this.imageLedger.used(id, ref, spec.leaseUuid, spec.release, this.#clock.now());
    } catch (err) {
      this.#log.warn({ image: id, err: engineMessage(err) }, "image use not recorded");
    }
  }

  async #createInstances(
    spec: WorkloadSpec,
    byName: Map<string, ServiceModel>,
    images: Map<string, ImageFacts>,
    seeder: VolumeSeeder,
    signal: AbortSignal,
  ): Promise<void> {
    await this.#networks.withLease(spec.leaseUuid, async () => {
      const network = await this.#networks.ensure(spec.leaseUuid, spec.tenant, signal);
      for (const instance of spec.instances) {
        const model = byName.get(instance.service);
        const facts = model ? images.get(model.name) : undefined;
        if (!model || !facts)
          throw definite("Internal", "internal error while provisioning", "service missing");
        // Without a manifest `user`, the owner of the image's VOLUME dirs may be the one to run as.
        const run = await this.#instanceVolumes.withRunUser(model, facts, seeder, signal);
        const mounts = await this.#instanceVolumes.mounts(spec, instance, facts, run, seeder, signal);
        const opts = buildContainerSpec({
          spec,
          instance,
          // Created from the pinned image, never the tag (which may have moved since).
          model: { ...run, image: facts.pinned },
          config: this.#config,
          network,
          mounts,
        });
        await this.#createOrAdopt(spec, opts, signal);
      }
    });
  }

  async #createOrAdopt(
    spec: WorkloadSpec,
    opts: Docker.ContainerCreateOptions,
    signal: AbortSignal,
  ): Promise<void> {
    const name = opts.name as string;
    try {
      await withPhase(this.#clock, "container create", this.#config.containerCreateTimeoutMs, signal, (s) =>
        this.#docker.createContainer({ ...opts, abortSignal: s } as Docker.ContainerCreateOptions),
      );
      return;
    } catch (err) {
      if (engineStatus(err) !== 409) {
        const status = engineStatus(err);
        if (status !== undefined && status >= 400 && status < 500) {
          throw definite("ContainerStartFailed", "a container could not be created", `create ${name}`, err);
        }
        throw ambiguous(`create ${name}`, err);
      }
    }
    // The name exists: re-use it only when it is exactly this lease's operation and release.
    let labels: Record<string, string>;
    try {
      labels = (await this.#docker.getContainer(name).inspect({ abortSignal: signal })).Config.Labels ?? {};
    } catch (err) {
      throw ambiguous(`inspect ${name}`, err);
    }
    const same =
      labels[LABEL.leaseUuid] === spec.leaseUuid &&
      labels[LABEL.storageId] === this.#storageId &&
      labels[LABEL.operationId] === spec.operationId &&
      labels[LABEL.release] === String(spec.release);
    if (!same) {
      this.#reportStale(name, spec.leaseUuid, labels, "create found a same-named container");
      throw definite(
        "Internal",
        "internal error while provisioning",
        `container ${name} exists and is not ours`,
      );
    }
  }

  #reportStale(container: string, lease: string, labels: Record<string, string>, why: string): void {
    this.staleHandles++;
    this.#log.warn(
      {
        lease_uuid: lease,
        container,
        found_lease: labels[LABEL.leaseUuid],
        found_storage_id: labels[LABEL.storageId],
        found_release: labels[LABEL.release],
      },
      `stale handle left in place: ${why}`,
    );
  }

  async start(spec: WorkloadSpec, signal: AbortSignal): Promise<void> {
    await this.#startChecked(spec, signal, false);
  }

  async #startChecked(
    spec: WorkloadSpec,
    signal: AbortSignal,
    startStopped: boolean,
    replacing: ReadonlySet<string> = new Set(),
  ): Promise<void> {
    this.#shareable(signal);
    await this.#during(spec.leaseUuid, async () => {
      try {
        await this.#startAndVerify(spec, signal, startStopped, replacing);
      } catch (err) {
        // A failed lease must not keep its other instances running: stop them, keep them
        // (and their logs) until the lease is re-provisioned or closed.
        if (err instanceof SubstrateError && err.outcome === "definite") {
          await this.#stopAll(spec.leaseUuid, signal).catch((e) =>
            this.#log.warn(
              { lease_uuid: spec.leaseUuid, err: engineMessage(e) },
              "stopping a failed lease failed",
            ),
          );
        }
        throw err;
      }
    });
  }

  /**
   * Only the spec's release: during an update the previous one's containers are beside it,
   * during a restart the old containers (`replacing`) are being removed. The ready path of
   * provision, restart, update and rollback: once verified, the lease's routes point at
   * this release.
   */
  async #startAndVerify(
    spec: WorkloadSpec,
    signal: AbortSignal,
    startStopped: boolean,
    replacing: ReadonlySet<string>,
  ): Promise<void> {
    const release = String(spec.release);
    await startAndVerify(
      {
        docker: this.#docker,
        clock: this.#clock,
        log: this.#log,
        list: async (s) =>
          (await this.#list(s, spec.leaseUuid)).filter(
            (r) => r.Labels?.[LABEL.release] === release && !replacing.has(r.Id),
          ),
        startStopped,
        metrics: this.#metrics,
        startTimeoutMs: this.#config.containerStartTimeoutMs,
        verifyMs: this.#config.startupVerifyDurationMs,
        deadlineMs: this.#clock.now() + this.#config.provisionTimeoutMs,
      },
      this.#models(spec),
      signal,
    );
    await this.routeLease(spec, signal);
  }

  /**
   * Points the lease's hostnames at the spec's release: its containers' tenant-network
   * addresses. Derived state: a proxy failure is logged (the ingress health loop
   * re-applies) and never fails the lease.
   */
  async routeLease(
    spec: Pick<WorkloadSpec, "leaseUuid" | "tenant" | "items" | "manifest" | "release">,
    signal: AbortSignal,
  ): Promise<void> {
    const ingress = this.#ingress;
    if (!ingress || !spec.manifest) return;
    try {
      const release = String(spec.release);
      const rows = (await this.#list(signal, spec.leaseUuid)).filter(
        (r) => r.Labels?.[LABEL.release] === release,
      );
      const routes = leaseRoutes({
        leaseUuid: spec.leaseUuid,
        services: spec.manifest.services,
        rows,
        networks: [leaseNetworkName(spec.leaseUuid), legacyTenantNetworkName(spec.tenant)],
        wildcardDomain: ingress.wildcardDomain,
      });
      await ingress.setLease(spec.leaseUuid, routes, spec.items);
    } catch (err) {
      this.#log.warn({ lease_uuid: spec.leaseUuid, err: engineMessage(err) }, "ingress routes not updated");
    }
  }

  async reconcileCustomDomains(leaseUuid: string, items: readonly LeaseItem[]): Promise<void> {
    await this.#ingress?.setCustomDomains(leaseUuid, items);
  }

  /**
   * The lease's containers that pass the stale-handle check: found by lease label, then
   * re-inspected by id and kept only when lease and storage id still match.
   */
  async #owned(lease: string, signal: AbortSignal): Promise<OwnedContainer[]> {
    let rows: ContainerRow[];
    try {
      rows = await this.#docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${LABEL.leaseUuid}=${lease}`] }),
        abortSignal: signal,
      } as Docker.ContainerListOptions);
    } catch (err) {
      throw ambiguous("list containers", err);
    }
    const out: OwnedContainer[] = [];
    for (const row of rows) {
      let info: Docker.ContainerInspectInfo;
      try {
        info = await this.#docker.getContainer(row.Id).inspect({ abortSignal: signal });
      } catch (err) {
        if (isNotFound(err)) continue;
        throw ambiguous(`inspect ${row.Id}`, err);
      }
      const labels = info.Config.Labels ?? {};
      if (labels[LABEL.leaseUuid] !== lease || labels[LABEL.storageId] !== this.#storageId) {
        this.#reportStale(row.Id, lease, labels, "labels name another lease or deployment");
        continue;
      }
      out.push({ id: row.Id, name: info.Name.replace(/^\//, ""), labels, image: info.Image });
    }
    return out;
  }

  #expectDeath(id: string): void {
    this.#deaths.expect(id);
  }

  async stop(leaseUuid: string, signal: AbortSignal): Promise<void> {
    this.#shareable(signal);
    await this.#during(leaseUuid, () => this.#stopAll(leaseUuid, signal));
  }

  async #stopAll(leaseUuid: string, signal: AbortSignal): Promise<void> {
    await this.#ingress?.dropLease(leaseUuid);
    for (const { id } of await this.#owned(leaseUuid, signal)) await this.#stopContainer(id, signal);
  }

  /**
   * Stops one container we own (already stopped or gone is success). The engine sends
   * SIGTERM, waits the grace period `t`, then SIGKILLs: `t` is the service's own
   * stop_grace_period when its manifest set one, else container_stop_timeout. The call
   * itself is bounded by that grace plus the engine's allowance, never by the grace alone.
   */
  async #stopContainer(id: string, signal: AbortSignal): Promise<void> {
    this.#expectDeath(id);
    const container = this.#docker.getContainer(id);
    try {
      const info = await withPhase(this.#clock, "container stop", ENGINE_CALL_ALLOWANCE_MS, signal, (s) =>
        container.inspect({ abortSignal: s }),
      );
      if (info.State?.Running !== true) return;
      const own = (info.Config as { StopTimeout?: number }).StopTimeout;
      const t = stopGraceSeconds(own, this.#config.containerStopTimeoutMs);
      await withPhase(this.#clock, "container stop", t * 1000 + ENGINE_CALL_ALLOWANCE_MS, signal, (s) =>
        container.stop({ t, abortSignal: s }),
      );
    } catch (err) {
      if (isNotFound(err) || engineStatus(err) === 304) return;
      throw ambiguous(`stop ${id}`, err);
    }
  }

  /** Removes one container we own, running or not (gone is success). */
  async #removeContainer(id: string, signal: AbortSignal): Promise<void> {
    this.#expectDeath(id);
    try {
      // A forced remove kills at once: no grace period, only the engine's allowance.
      await withPhase(this.#clock, "container remove", ENGINE_CALL_ALLOWANCE_MS, signal, (s) =>
        this.#docker.getContainer(id).remove({ force: true, abortSignal: s }),
      );
    } catch (err) {
      if (isNotFound(err)) return;
      throw ambiguous(`remove ${id}`, err);
    }
  }

  async removeWorkload(leaseUuid: string, signal: AbortSignal): Promise<void> {
    this.#shareable(signal);
    await this.#during(leaseUuid, () => this.#removeContainers(leaseUuid, signal));
  }

  /**
   * A close's teardown. A failure names its phase as the reason the tenant sees while the
   * close is retried: CleanupFailed (routes, containers, network) or VolumeDeletionInProgress.
   */
  async destroyLease(leaseUuid: string, signal: AbortSignal): Promise<void> {
    this.#shareable(signal);
    await this.#during(leaseUuid, async () => {
      try {
        await this.#ingress?.forgetLease(leaseUuid);
        await this.#removeContainers(leaseUuid, signal);
      } catch (err) {
        throw cleanupTrouble("CleanupFailed", CLEANUP_FAILED_MESSAGE, `containers of ${leaseUuid}`, err);
      }
      try {
        await this.#destroyVolumes(leaseUuid, signal);
      } catch (err) {
        throw cleanupTrouble(
          "VolumeDeletionInProgress",
          VOLUME_DELETION_MESSAGE,
          `volumes of ${leaseUuid}`,
          err,
        );
      }
    });
  }

  /**
   * The lease's containers (ownership-checked), then its network; and the tenant network
   * an earlier version shared, once the last lease on it is gone.
   */
  async #removeContainers(leaseUuid: string, signal: AbortSignal): Promise<void> {
    await this.#ingress?.dropLease(leaseUuid);
    const owned = await this.#owned(leaseUuid, signal);
    const tenants = new Set(owned.map((c) => c.labels[LABEL.tenant]).filter((t): t is string => !!t));
    for (const { id } of owned) await this.#removeContainer(id, signal);
    const names = [leaseNetworkName(leaseUuid), ...[...tenants].map(legacyTenantNetworkName)];
    await this.#networks.withLease(leaseUuid, async () => {
      for (const name of names) {
        await this.#networks
          .removeIfUnused(name, signal)
          .catch((err) => this.#log.warn({ network: name, err: engineMessage(err) }, "network not removed"));
      }
    });
  }

  /** The one place volumes are deleted: each only when its owner file names this lease and storage id. */
  async #destroyVolumes(leaseUuid: string, signal: AbortSignal): Promise<void> {
    if (!this.#volumes) return;
    for (const volume of (await this.#volumes.list()).filter((v) => v.leaseUuid === leaseUuid)) {
      const removed = await this.#volumes.destroy(
        volume.name,
        { storageId: this.#storageId, leaseUuid },
        signal,
      );
      if (!removed) {
        this.#destroyRefused("foreign_owner");
        this.#reportStale(volume.name, leaseUuid, {}, "volume owner file names another owner");
      }
    }
  }

  // ---- retention (see retention/retained-volumes.ts); btrfs failures are ambiguous ----

  async retain(
    leaseUuid: string,
    instances: readonly InstanceSpec[],
    signal: AbortSignal,
  ): Promise<RetainedSet> {
    if (!this.retained) return { volumes: [], fsIdentity: undefined };
    const retained = this.retained;
    return this.#during(leaseUuid, () =>
      retained.retain(leaseUuid, instances, signal).catch((err) => {
        throw ambiguous(`retain volumes of ${leaseUuid}`, err);
      }),
    );
  }

  async destroyRetained(leaseUuid: string, names: readonly string[], signal: AbortSignal): Promise<void> {
    await this.retained?.destroy(leaseUuid, names, signal).catch((err) => {
      throw ambiguous(`destroy retained volumes of ${leaseUuid}`, err);
    });
  }

  async adoptRetained(
    fromLease: string,
    volumes: readonly RetainedVolume[],
    spec: WorkloadSpec,
    signal: AbortSignal,
  ): Promise<void> {
    if (!this.retained || volumes.length === 0) return;
    const retained = this.retained;
    await this.#during(spec.leaseUuid, () =>
      retained.adopt(fromLease, volumes, spec, signal).catch((err) => {
        if (isFredError(err, "ERR_VOLUME_FOREIGN")) {
          this.#reportStale(
            spec.leaseUuid,
            spec.leaseUuid,
            {},
            "a restore's target volume belongs to another owner",
          );
          throw definite("RestoreFailed", "the retained data could not be adopted", "adopt", err);
        }
        throw ambiguous(`adopt retained volumes of ${fromLease}`, err);
      }),
    );
  }

  async retainedInventory(): Promise<RetainedInventory> {
    if (!this.retained) throw ambiguous("retained inventory", new Error("no volume root"));
    return this.retained.inventory().catch((err) => {
      throw ambiguous("retained inventory", err);
    });
  }

  /** The seam's restart: see maintenance/restart.ts. */
  async restart(spec: WorkloadSpec, signal: AbortSignal): Promise<void> {
    this.#shareable(signal);
    await this.#during(spec.leaseUuid, () => restartWorkload(this.#maintenance, spec, signal));
  }

  /** The seam's update: see maintenance/update.ts. */
  async update(current: WorkloadSpec, next: WorkloadSpec, signal: AbortSignal): Promise<void> {
    this.#shareable(signal);
    await this.#during(current.leaseUuid, () => updateWorkload(this.#maintenance, current, next, signal));
  }

  async inspect(leaseUuid: string, signal: AbortSignal): Promise<WorkloadObservation | undefined> {
    const rows = await this.#list(signal, leaseUuid);
    if (rows.length > 0) return observeLease(leaseUuid, rows);
    const volumes = this.#volumes ? await this.#volumes.list() : [];
    return volumes.some((v) => v.leaseUuid === leaseUuid)
      ? { leaseUuid, state: "partial", instances: [] }
      : undefined;
  }

  async inventory(signal: AbortSignal): Promise<WorkloadObservation[]> {
    const byLease = groupByLease(await this.#list(signal));
    const out = [...byLease].map(([lease, rows]) => observeLease(lease, rows));
    if (this.#volumes) {
      let volumes: { leaseUuid: string }[];
      try {
        volumes = await this.#volumes.list();
      } catch (err) {
        throw ambiguous("list volumes", err);
      }
      for (const lease of new Set(volumes.map((v) => v.leaseUuid))) {
        if (!byLease.has(lease)) out.push({ leaseUuid: lease, state: "partial", instances: [] });
      }
    }
    return out.sort((a, b) => a.leaseUuid.localeCompare(b.leaseUuid));
  }

  async logs(leaseUuid: string, tail: number, signal: AbortSignal): Promise<Record<string, string>> {
    this.#shareable(signal);
    const rows = groupByLease(await this.#list(signal, leaseUuid)).get(leaseUuid) ?? [];
    const entries: [string, string][] = [];
    for (const row of rows) {
      const key = instanceKey(
        row.Labels?.[LABEL.serviceName] ?? "",
        Number(row.Labels?.[LABEL.instanceIndex] ?? 0),
      );
      try {
        const raw = (await this.#docker.getContainer(row.Id).logs({
          stdout: true,
          stderr: true,
          follow: false,
          tail,
          abortSignal: signal,
        })) as unknown as Buffer;
        entries.push([key, demuxLogStream(Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw)))]);
      } catch (err) {
        this.#log.warn({ lease_uuid: leaseUuid, key, err: engineMessage(err) }, "container logs unavailable");
        entries.push([key, LOG_UNAVAILABLE]);
      }
    }
    return applyLogBudget(entries);
  }

  /** The streaming log read (log-follow.ts): the lease's containers' engine log streams, merged. */
  followLogs(leaseUuid: string, tail: number, signal: AbortSignal): AsyncIterable<LogEvent> {
    this.#shareable(signal);
    const deps = {
      docker: this.#docker,
      clock: this.#clock,
      log: this.#log,
      list: (s: AbortSignal) => this.#list(s, leaseUuid),
    };
    return followContainerLogs(deps, leaseUuid, tail, signal);
  }

  /** A shell session in one of the lease's containers (see exec.ts). */
  exec(leaseUuid: string, req: ExecRequest, signal: AbortSignal): Promise<ExecSession> {
    return dockerExec(this.#docker, leaseUuid, req, signal, this.#log);
  }

  async connection(leaseUuid: string, signal: AbortSignal): Promise<ConnectionInfo | undefined> {
    const all = groupByLease(await this.#list(signal, leaseUuid)).get(leaseUuid) ?? [];
    if (all.length === 0 || observeLease(leaseUuid, all).state !== "running") return undefined;
    const info = connectionInfo(servingRows(all).rows, {
      hostAddress: this.#config.hostAddress,
      bindIp: this.#config.hostBindIp,
      backendName: this.#config.name,
    });
    return this.#ingress ? withFqdns(info, this.#ingress.fqdns(leaseUuid)) : info;
  }

  /**
   * State recovery at start: removes our managed networks no container is attached to any
   * more (a crash between the last container's removal and the network's).
   */
  async pruneNetworks(signal: AbortSignal): Promise<void> {
    const networks = await this.#docker.listNetworks({
      filters: JSON.stringify({ label: [`${LABEL.managed}=true`, `${LABEL.storageId}=${this.#storageId}`] }),
    });
    for (const network of networks) {
      const lease = network.Labels?.[LABEL.leaseUuid];
      const remove = () => this.#networks.removeIfUnused(network.Name, signal);
      await (lease === undefined ? remove() : this.#networks.withLease(lease, remove));
    }
  }

  subscribe(listener: (event: RuntimeEvent) => void): () => void {
    return this.#deaths.subscribe(listener);
  }

  /**
   * Unhealthy while the engine does not answer a ping (leases cannot be served then), or
   * while the egress rules cannot be loaded (new tenant networks would run unfiltered).
   */
  /** Every running instance's usage in one pass (usage-sampler.ts says how it stays cheap). */
  sampleUsage(signal: AbortSignal): Promise<Map<string, InstanceSample[]>> {
    return this.#usage.sample(signal);
  }

  async health(signal: AbortSignal): Promise<string | undefined> {
    const egress = this.#egress?.problem();
    if (egress !== undefined) return egress;
    try {
      // dockerode takes an abortSignal here; its type definitions do not say so.
      const ping = this.#docker.ping.bind(this.#docker) as unknown as (o: {
        abortSignal: AbortSignal;
      }) => Promise<unknown>;
      await ping({ abortSignal: signal });
      return undefined;
    } catch (err) {
      return `docker engine is not answering: ${engineMessage(err)}`;
    }
  }

  async close(): Promise<void> {
    await this.#deaths.close();
  }
}

/** What a stop or remove call may take beyond the grace period it gives the container. */
const ENGINE_CALL_ALLOWANCE_MS = 30_000;

/** docker stop's `t` (whole seconds, at least 1): the service's own grace, else the configured one. */
export function stopGraceSeconds(serviceGrace: number | undefined, configuredMs: number): number {
  if (serviceGrace !== undefined && Number.isInteger(serviceGrace) && serviceGrace >= 1) return serviceGrace;
  return Math.max(1, Math.ceil(configuredMs / 1000));
}
