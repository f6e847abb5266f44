import { statfs } from "node:fs/promises";
import type Docker from "dockerode";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Clock } from "../../../core/clock.ts";
import type { Logger } from "../../../log.ts";
import { PeriodicPass } from "../../kit/index.ts";
import { engineMessage, engineStatus, isNotFound, withPhase } from "../engine.ts";
import type { ImageGate } from "./gate.ts";
import type { ImageLedger } from "./ledger.ts";
import { type ImageGcPolicy, planCollection, type Removal, removalTargets } from "./policy.ts";

/**
 * The image sweep: at start and every `image_gc_interval`, gathers what is in use (the
 * journal's leases, releases and retentions, by recorded use and by reference; every
 * container on the engine) and the disk figures, lets policy.ts decide, and removes what it
 * chose without force (an image a container uses makes the engine refuse: kept). Any
 * failure to establish what is in use skips the pass: nothing is removed without proof.
 */

export interface ImageCollectorOptions {
  docker: Docker;
  clock: Clock;
  log: Logger;
  registry: Registry | undefined;
  policy: ImageGcPolicy;
  intervalMs: number;
  ledger: ImageLedger;
  gate: ImageGate;
  /** The image references a stored manifest names; throws when it cannot be read. */
  imagesOf: (manifest: Uint8Array) => string[];
}

/** One engine call of a sweep (list, inspect, info, remove). */
const ENGINE_CALL_MS = 60_000;

interface InUse {
  present: Map<string, number>;
  tags: Map<string, string[]>;
  needed: Set<string>;
  referenced: Set<string>;
}

export class ImageCollector {
  readonly #options: ImageCollectorOptions;
  readonly #log: Logger;
  readonly #metrics: {
    collected: Counter<"cause">;
    freed: Counter;
    waiting: Gauge;
    waitingBytes: Gauge;
  };
  readonly #pass: PeriodicPass;
  #diskWarned = false;

  constructor(options: ImageCollectorOptions) {
    this.#options = options;
    this.#log = options.log.child({ component: "image-gc" });
    this.#pass = new PeriodicPass({
      clock: options.clock,
      intervalMs: () => options.intervalMs,
      run: (signal) => this.#sweepOnce(signal),
      onError: (err) =>
        this.#log.warn(
          { err: engineMessage(err) },
          "image collection pass stopped; the next pass tries again",
        ),
    });
    const registers = options.registry ? [options.registry] : [];
    this.#metrics = {
      collected: new Counter({
        name: "fred_images_collected_total",
        help: "Images the backend brought onto the host and removed once unused, by cause (unused, disk_pressure)",
        labelNames: ["cause"] as const,
        registers,
      }),
      freed: new Counter({
        name: "fred_image_bytes_freed_total",
        help: "Bytes of the images collected (their size as the engine reports it; shared layers count in full)",
        registers,
      }),
      waiting: new Gauge({
        name: "fred_image_gc_candidates",
        help: "Images no lease uses, kept until image_gc_after has passed since their last use",
        registers,
      }),
      waitingBytes: new Gauge({
        name: "fred_image_gc_candidate_bytes",
        help: "Bytes of the images counted by fred_image_gc_candidates",
        registers,
      }),
    };
  }

  /** A first pass now, then one every interval after the previous ends. */
  start(): void {
    this.#pass.start();
  }

  stop(): Promise<void> {
    return this.#pass.stop();
  }

  /** One pass; concurrent callers share it. */
  sweep(): Promise<void> {
    return this.#pass.run();
  }

  async #sweepOnce(signal: AbortSignal): Promise<void> {
    const { ledger, clock, policy } = this.#options;
    const ledgerRows = ledger.all();
    if (ledgerRows.length === 0) return this.#setWaiting(0, 0);
    const inUse = await this.#inUse(signal);
    const disk = await this.#disk(signal);
    const nowMs = clock.now();
    const plan = planCollection(policy, { nowMs, ledger: ledgerRows, ...inUse, disk });
    ledger.touch(plan.inUse, nowMs);
    ledger.forget(plan.forget);
    let leftCount = plan.waiting.count;
    let leftBytes = plan.waiting.bytes;
    for (const removal of plan.remove) {
      if (signal.aborted) return;
      if (await this.#remove(removal, inUse.tags.get(removal.image.id) ?? [], signal)) continue;
      if (removal.cause === "unused") {
        leftCount++;
        leftBytes += removal.bytes;
      }
    }
    this.#setWaiting(leftCount, leftBytes);
  }

  #setWaiting(count: number, bytes: number): void {
    this.#metrics.waiting.set(count);
    this.#metrics.waitingBytes.set(bytes);
  }

  #engine<T>(signal: AbortSignal, call: (s: AbortSignal) => Promise<T>): Promise<T> {
    return withPhase(this.#options.clock, "image gc", ENGINE_CALL_MS, signal, call);
  }

  /** Every image on the host, and the IDs in use: by a container, a recorded use, a stored manifest. */
  async #inUse(signal: AbortSignal): Promise<InUse> {
    const { docker, ledger, imagesOf } = this.#options;
    const images = await this.#engine(signal, (s) =>
      docker.listImages({ abortSignal: s } as Docker.ListImagesOptions),
    );
    const present = new Map(images.map((i) => [i.Id, i.Size]));
    const tags = new Map(images.map((i) => [i.Id, i.RepoTags ?? []]));
    const containers = await this.#engine(signal, (s) =>
      docker.listContainers({ all: true, abortSignal: s } as Docker.ContainerListOptions),
    );
    const recorded = ledger.recordedUses();
    const needed = new Set([...containers.map((c) => c.ImageID), ...recorded.needed]);
    const referenced = new Set(recorded.releases);
    // By reference too: a use recorded before this ledger existed, or a tag that still names it.
    const manifests = ledger.manifests();
    const refs = (bodies: Buffer[]) => new Set(bodies.flatMap((b) => imagesOf(b)));
    for (const [set, names] of [
      [needed, refs(manifests.needed)],
      [referenced, refs(manifests.history)],
    ] as const) {
      for (const ref of names) {
        const id = await this.#resolve(ref, signal);
        if (id !== undefined) set.add(id);
      }
    }
    return { present, tags, needed, referenced };
  }

  async #resolve(ref: string, signal: AbortSignal): Promise<string | undefined> {
    try {
      const info = await this.#engine(signal, (s) =>
        this.#options.docker.getImage(ref).inspect({ abortSignal: s } as object),
      );
      return info.Id;
    } catch (err) {
      // Absent, or a reference the engine says cannot name any image: it protects nothing.
      if (isNotFound(err) || engineStatus(err) === 400) return undefined;
      throw err;
    }
  }

  /** The file system holding the engine's data root; undefined (and one warning) when unreadable. */
  async #disk(signal: AbortSignal): Promise<{ totalBytes: number; usedBytes: number } | undefined> {
    try {
      const info = (await this.#engine(signal, () => this.#options.docker.info())) as {
        DockerRootDir?: string;
      };
      if (!info.DockerRootDir) throw new Error("the engine reports no DockerRootDir");
      const fs = await statfs(info.DockerRootDir);
      const usedBlocks = fs.blocks - fs.bfree;
      // As df counts: blocks reserved for root are neither used nor available.
      return { totalBytes: (usedBlocks + fs.bavail) * fs.bsize, usedBytes: usedBlocks * fs.bsize };
    } catch (err) {
      if (signal.aborted) throw err;
      if (!this.#diskWarned)
        this.#log.warn(
          { err: engineMessage(err) },
          "the engine's data root cannot be measured; images are collected by age only",
        );
      this.#diskWarned = true;
      return undefined;
    }
  }

  /** True when the image is gone from the host. */
  async #remove(removal: Removal, repoTags: readonly string[], signal: AbortSignal): Promise<boolean> {
    const { image } = removal;
    const targets = removalTargets(image, repoTags);
    if (targets.by === "none") {
      this.#log.info(
        { image: image.id, tags: repoTags },
        "image kept: a name the backend never used points at it",
      );
      return false;
    }
    const names = targets.by === "id" ? [image.id] : targets.tags;
    const docker = this.#options.docker;
    try {
      const outcome = await this.#options.gate.removing(async () => {
        for (const name of names)
          await this.#engine(signal, (s) =>
            docker.getImage(name).remove({ force: false, noprune: false, abortSignal: s }),
          );
      });
      if (outcome.skipped) return false;
    } catch (err) {
      if (isNotFound(err)) {
        this.#options.ledger.forget([image.id]);
        return true;
      }
      // 409: a container uses it (or another name appeared); the engine refused, so it stays.
      if (engineStatus(err) === 409)
        this.#log.info(
          { image: image.id, err: engineMessage(err) },
          "image kept: the engine refused its removal",
        );
      else if (!signal.aborted)
        this.#log.warn(
          { image: image.id, err: engineMessage(err) },
          "image removal failed; next sweep retries",
        );
      return false;
    }
    this.#options.ledger.forget([image.id]);
    this.#metrics.collected.inc({ cause: removal.cause });
    this.#metrics.freed.inc(removal.bytes);
    this.#log.info(
      { image: image.id, refs: image.refs, bytes: removal.bytes, cause: removal.cause },
      "image collected",
    );
    return true;
  }
}
