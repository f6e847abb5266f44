import { setFlagsFromString } from "node:v8";

/**
 * How far V8 lets the old generation grow past what survived the last full collection
 * before it collects again, in percent. V8's own default is a factor of up to 4× when
 * allocation is fast, which is right for a short job and wrong for a daemon that runs
 * beside workloads: in a 10,000-lease burst providerd's live heap stays under ~100 MB,
 * yet its resident memory reached 300–330 MB under load, most of it garbage V8 had not
 * yet collected. At 10 % the burst peaks near 210 MB for 10–25 % more CPU and the same
 * wall time (docs/benchmarks.md, "Burst memory").
 */
export const HEAP_GROWING_PERCENT = 10;

/**
 * Applies the daemon's heap growth limit to this process. V8 reads this flag every time
 * it sets the next collection's threshold, so setting it after startup takes effect
 * (unlike the heap size flags, which only `node` options can set); a test checks that it
 * still does on the Node.js version in use.
 */
export function applyDaemonHeapPolicy(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
