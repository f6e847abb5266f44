import { constants, PerformanceObserver } from "node:perf_hooks";
import { GCProfiler, getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * How far providerd's heap may grow past what survived its last full collection.
 *
 * V8 lets the old generation grow to up to four times its live size before collecting
 * it again when allocation is fast. providerd's live heap is small (about 40 MB idle,
 * under 60 MB in a burst of 10,000 new leases), but a burst allocates fast, so that
 * room filled with garbage: a 290 MB resident peak over a 55 MB live heap. While the
 * live heap is small, growth is capped at CAPPED_GROWTH_PERCENT; the collections this
 * adds are cheap because there is little to mark.
 *
 * A reconciler sweep, and a large live heap, get V8's own policy back. A sweep allocates
 * fast while it holds every listing (hundreds of MB at 100,000 leases): a 30 % cap made
 * V8 collect every few tens of MB, and the 100,000-lease sweep took 2.4 times as long; at
 * 30,000 leases, whose sweep stays under the threshold, it cost 40 % more CPU. The switch
 * follows each full collection and each sweep's start and end (`--heap-growing-percent`
 * is read whenever V8 computes its next limit). V8 computes that limit only at a full
 * collection, so one is run where the cap starts to apply: once startup is done (the
 * limit then in force was set while modules loaded, under V8's policy) and at the end of
 * a sweep during which a full collection set a limit under V8's policy (the sweep's
 * garbage would otherwise stay until that large limit is reached). A sweep that ran no
 * full collection left the capped limit in force: a forced one would only pause the
 * daemon (25–80 ms on a 30 MB heap, where V8's own collections mark concurrently).
 *
 * An operator who sets --heap-growing-percent on node's command line keeps it: the policy
 * then does nothing. (Node refuses the flag in NODE_OPTIONS: it never gets that far.)
 */
export const CAPPED_GROWTH_PERCENT = 30;
/** Live heap (after a full collection) from which V8's own growth policy applies. */
export const CAP_BELOW_BYTES = 128 * 1024 * 1024;

/** The growth after a full collection that left `liveBytes`: a percent, or 0 for V8's own policy. */
export function growthPercentFor(liveBytes: number): number {
  return liveBytes < CAP_BELOW_BYTES ? CAPPED_GROWTH_PERCENT : 0;
}

export interface HeapPolicyOptions {
  /** node's own flags (process.execArgv): an operator's setting wins. */
  execArgv?: readonly string[];
  /** For tests: where the flag goes (default v8.setFlagsFromString). */
  setFlags?: (flags: string) => void;
  /** For tests: a full collection (default V8's, through a context with `gc` exposed). */
  collect?: () => void;
}

/** V8's full collection, which node exposes only behind --expose-gc (set here, for a new context). */
function v8FullCollection(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

export interface HeapPolicy {
  /** The growth percent in force (0: V8's own). */
  readonly percent: number;
  /** Runs `work` under V8's own policy (a reconciler sweep); the cap applies again after it. */
  uncapped<T>(work: () => Promise<T>): Promise<T>;
  /** A full collection now, so the cap governs the heap from here (providerd calls it once started). */
  settle(): void;
  stop(): void;
}

/** Starts the policy for this process; undefined when the operator set the flag. */
export function startHeapPolicy(o: HeapPolicyOptions = {}): HeapPolicy | undefined {
  const execArgv = o.execArgv ?? process.execArgv;
  if (execArgv.some((f) => /--heap[-_]growing[-_]percent/.test(f))) return undefined;
  const setFlags = o.setFlags ?? setFlagsFromString;
  let collect = o.collect;
  let percent = -1;
  let uncappedRuns = 0;
  /**
   * Records the collections of the current uncapped stretch (overlapping sweeps share one).
   * Not the observer below: its entries are delivered a turn or two after the collection,
   * and the sweep's end must know at once whether one ran.
   */
  let uncappedGcs: GCProfiler | undefined;
  let stopped = false;
  const follow = () => {
    if (stopped) return;
    const next = uncappedRuns > 0 ? 0 : growthPercentFor(getHeapStatistics().used_heap_size);
    if (next === percent) return;
    percent = next;
    setFlags(`--heap-growing-percent=${next}`);
  };
  follow();
  const observer = new PerformanceObserver((list) => {
    const major = list
      .getEntries()
      .some(
        (e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR,
      );
    if (major) follow();
  });
  observer.observe({ entryTypes: ["gc"] });
  const policy: HeapPolicy = {
    get percent() {
      return percent;
    },
    async uncapped(work) {
      if (uncappedRuns++ === 0) {
        uncappedGcs = new GCProfiler();
        uncappedGcs.start();
      }
      follow();
      try {
        return await work();
      } finally {
        uncappedRuns--;
        follow();
        if (uncappedRuns === 0) {
          const full = uncappedGcs?.stop()?.statistics.some((gc) => gc.gcType === "MarkSweepCompact");
          uncappedGcs = undefined;
          // After the sweep's result is handed on: its caller does not wait for the collection.
          if (full) setImmediate(() => policy.settle());
        }
      }
    },
    settle() {
      if (stopped) return;
      collect ??= v8FullCollection();
      collect();
      follow();
    },
    stop() {
      stopped = true;
      observer.disconnect();
      if (percent !== 0) setFlags("--heap-growing-percent=0");
      percent = 0;
    },
  };
  return policy;
}
