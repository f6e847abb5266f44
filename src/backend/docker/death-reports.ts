import type Docker from "dockerode";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { RuntimeEvent } from "../kit/index.ts";
import { engineMessage, withPhase } from "./engine.ts";
import { type ContainerDeath, EventSupervisor } from "./event-supervisor.ts";
import { LABEL } from "./names.ts";
import { type ContainerRow, groupByLease, observeLease } from "./observe.ts";

/**
 * Turns container deaths into the kit's runtime events, exactly once per container:
 * from the live event stream, and from a re-inventory each time the stream (re)connects,
 * which covers deaths while the backend or the engine was down. Deaths the backend caused
 * (stop, remove) and leases under its own lifecycle work are not reported.
 */

const REMEMBERED = 10_000;
/** How long the listing after an engine reconnect may take before the resync gives up. */
const RESYNC_LIST_MS = 60_000;

/** Adds to a bounded set, forgetting the oldest entry past 10,000. */
function remember(set: Set<string>, id: string): void {
  set.add(id);
  if (set.size > REMEMBERED) {
    const oldest = set.values().next().value;
    if (oldest !== undefined) set.delete(oldest);
  }
}

export interface DeathReportsOptions {
  docker: Docker;
  clock: Clock;
  log: Logger;
  storageId: string;
  /** A lease under the backend's own lifecycle work: its deaths are expected. */
  isBusy: (lease: string) => boolean;
  /** Every container of this deployment (any state). */
  listOurs: (signal: AbortSignal) => Promise<ContainerRow[]>;
  /** Hears each death reported from the live stream (the exits metric). */
  onExit?: (death: ContainerDeath) => void;
}

export class DeathReports {
  readonly #reported = new Set<string>();
  readonly #expected = new Set<string>();
  readonly #listeners = new Set<(event: RuntimeEvent) => void>();
  readonly #opts: DeathReportsOptions;
  #supervisor: EventSupervisor | undefined;

  constructor(opts: DeathReportsOptions) {
    this.#opts = opts;
  }

  get supervisor(): EventSupervisor | undefined {
    return this.#supervisor;
  }

  /** The backend is about to stop or remove this container itself. */
  expect(containerId: string): void {
    remember(this.#expected, containerId);
  }

  subscribe(listener: (event: RuntimeEvent) => void): () => void {
    this.#listeners.add(listener);
    if (!this.#supervisor) {
      const { docker, clock, log, storageId } = this.#opts;
      this.#supervisor = new EventSupervisor({
        docker,
        clock,
        log,
        storageId,
        onDeath: (death) => this.#onDeath(death),
        onResync: () => this.#resync(),
      });
      this.#supervisor.start();
    }
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    await this.#supervisor?.stop();
    this.#listeners.clear();
  }

  #emit(event: RuntimeEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (err) {
        this.#opts.log.error({ err: engineMessage(err) }, "runtime event listener threw");
      }
    }
  }

  #onDeath(death: ContainerDeath): void {
    const lease = death.labels[LABEL.leaseUuid];
    if (!lease || this.#opts.isBusy(lease) || this.#expected.has(death.containerId)) return;
    if (this.#reported.has(death.containerId)) return;
    remember(this.#reported, death.containerId);
    const code = death.exitCode === undefined ? "" : ` with code ${death.exitCode}`;
    const where = `service ${death.labels[LABEL.serviceName]} instance ${death.labels[LABEL.instanceIndex]}`;
    const event: RuntimeEvent = {
      leaseUuid: lease,
      reason: "ContainerExited",
      message: `${where} exited unexpectedly${code}`,
    };
    if (death.labels[LABEL.operationId]) event.operationId = death.labels[LABEL.operationId];
    this.#opts.log.warn({ lease_uuid: lease, container: death.containerId }, "container died");
    this.#opts.onExit?.(death);
    this.#emit(event);
  }

  /** After (re)connecting to the engine: report every failed lease not reported yet. */
  async #resync(): Promise<void> {
    // No parent signal: the supervisor stops by ending the stream; a hung listing ends here.
    const rows: ContainerRow[] = await withPhase(
      this.#opts.clock,
      "container list",
      RESYNC_LIST_MS,
      undefined,
      (s) => this.#opts.listOurs(s),
    );
    for (const [lease, leaseRows] of groupByLease(rows)) {
      if (this.#opts.isBusy(lease)) continue;
      const obs = observeLease(lease, leaseRows);
      if (obs.state !== "failed") continue;
      const fresh = leaseRows.filter((r) => !this.#reported.has(r.Id) && !this.#expected.has(r.Id));
      if (fresh.length === 0) continue;
      for (const r of leaseRows) remember(this.#reported, r.Id);
      // Found dead only after the engine was away (restarted, unreachable): the platform
      // may have stopped it, so it never counts toward the lease's terminal budget.
      const event: RuntimeEvent = {
        leaseUuid: lease,
        reason: obs.reason ?? "ContainerExited",
        message: obs.message ?? "a container exited unexpectedly",
        platform: true,
      };
      if (obs.operationId) event.operationId = obs.operationId;
      this.#emit(event);
    }
  }
}
