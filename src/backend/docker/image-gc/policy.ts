/**
 * Which of the images the backend brought onto the host go, given what is known at one
 * moment: pure, so every rule is a table test. The collector (collector.ts) gathers the
 * facts from the journal and the engine and refuses to decide at all when it cannot
 * gather them; this function only ever removes an image it can see is unused.
 *
 * Two tiers of use protect an image:
 * - needed: a container exists from it (any container on the host), or a lease that is
 *   live (its current or deploying release), retained or pending names it. Never removed.
 * - referenced: only a release kept as history (superseded, failed) names it. Kept until
 *   the disk passes its high-water mark, then removed after every unreferenced image.
 * An image neither needed nor referenced is removed once it has been unused for
 * `image_gc_after`, or earlier, oldest-unused first, while the disk is above its mark.
 */

export interface ImageGcPolicy {
  /** How long an unreferenced image stays on the host (> 0; 0 disables collection upstream). */
  afterMs: number;
  /** Disk use (percent of the file system holding the engine's data root) that starts early collection. */
  highWaterPercent: number;
  /** Early collection removes images until the estimated use is at or below this. */
  lowWaterPercent: number;
}

/** One row of the ledger: an image the backend made available for a lease. */
export interface LedgerImage {
  id: string;
  /** The references it was asked for by (manifest `image` strings), oldest first. */
  refs: readonly string[];
  firstSeenMs: number;
  lastUsedMs: number;
}

export interface CollectionFacts {
  nowMs: number;
  ledger: readonly LedgerImage[];
  /** Every image on the host now, by ID, with its size in bytes. */
  present: ReadonlyMap<string, number>;
  needed: ReadonlySet<string>;
  referenced: ReadonlySet<string>;
  /** The file system holding the engine's data root; undefined when it could not be read. */
  disk: { totalBytes: number; usedBytes: number } | undefined;
}

export type RemovalCause = "unused" | "disk_pressure";

export interface Removal {
  image: LedgerImage;
  bytes: number;
  cause: RemovalCause;
}

export interface CollectionPlan {
  /** In the order to remove them. */
  remove: Removal[];
  /** Ledger rows whose image is no longer on the host (removed by someone else): forget them. */
  forget: string[];
  /** Ledger images in use now: their last use becomes now, so the delay counts from the last use. */
  inUse: string[];
  /** Unreferenced ledger images left on the host after this plan (waiting out the delay). */
  waiting: { count: number; bytes: number };
}

export function usedPercent(disk: { totalBytes: number; usedBytes: number }): number {
  return disk.totalBytes <= 0 ? 0 : (disk.usedBytes / disk.totalBytes) * 100;
}

export function planCollection(policy: ImageGcPolicy, facts: CollectionFacts): CollectionPlan {
  const remove: Removal[] = [];
  const forget: string[] = [];
  const inUse: string[] = [];
  const idle: { image: LedgerImage; bytes: number; history: boolean }[] = [];
  for (const image of facts.ledger) {
    const bytes = facts.present.get(image.id);
    if (bytes === undefined) {
      forget.push(image.id);
      continue;
    }
    if (facts.needed.has(image.id)) {
      inUse.push(image.id);
      continue;
    }
    const history = facts.referenced.has(image.id);
    if (history) inUse.push(image.id);
    else if (facts.nowMs - image.lastUsedMs >= policy.afterMs) {
      remove.push({ image, bytes, cause: "unused" });
      continue;
    }
    idle.push({ image, bytes, history });
  }
  if (facts.disk !== undefined && usedPercent(facts.disk) > policy.highWaterPercent) {
    const target = (facts.disk.totalBytes * policy.lowWaterPercent) / 100;
    let estimate = facts.disk.usedBytes - remove.reduce((n, r) => n + r.bytes, 0);
    // Unreferenced before history, each oldest-unused first; ID breaks ties so plans repeat.
    idle.sort(
      (a, b) =>
        Number(a.history) - Number(b.history) ||
        a.image.lastUsedMs - b.image.lastUsedMs ||
        a.image.id.localeCompare(b.image.id),
    );
    for (const candidate of idle.splice(0)) {
      if (estimate <= target) {
        idle.push(candidate);
        continue;
      }
      remove.push({ image: candidate.image, bytes: candidate.bytes, cause: "disk_pressure" });
      estimate -= candidate.bytes;
    }
  }
  const waiting = idle.filter((c) => !c.history);
  return {
    remove,
    forget,
    inUse,
    waiting: { count: waiting.length, bytes: waiting.reduce((n, c) => n + c.bytes, 0) },
  };
}

/**
 * A reference as the engine lists it in RepoTags: Docker Hub's `docker.io/` and
 * `library/` prefixes dropped, `:latest` added when neither tag nor digest is given.
 * Undefined for a digest reference (it names no tag).
 */
export function familiarTag(ref: string): string | undefined {
  if (ref.includes("@")) return undefined;
  let name = ref;
  const slash = name.indexOf("/");
  const first = slash < 0 ? "" : name.slice(0, slash);
  if (first === "docker.io" || first === "index.docker.io") name = name.slice(slash + 1);
  if (name.startsWith("library/") && name.indexOf("/", "library/".length) < 0)
    name = name.slice("library/".length);
  const lastSlash = name.lastIndexOf("/");
  return name.indexOf(":", lastSlash + 1) < 0 ? `${name}:latest` : name;
}

/**
 * How to remove an image without touching a name someone else gave it: by ID when it has
 * at most one tag and that tag is one of ours (the engine refuses an ID with several
 * repositories), by each of its tags when all are ours (the last untag removes it), and
 * not at all when any tag is not one the backend asked for.
 */
export function removalTargets(
  image: LedgerImage,
  repoTags: readonly string[],
): { by: "id" } | { by: "tags"; tags: string[] } | { by: "none" } {
  const tags = repoTags.filter((t) => t !== "<none>:<none>");
  const ours = new Set(image.refs.map(familiarTag).filter((t): t is string => t !== undefined));
  if (tags.some((t) => !ours.has(t))) return { by: "none" };
  return tags.length <= 1 ? { by: "id" } : { by: "tags", tags };
}
