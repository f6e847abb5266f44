/**
 * Child process of heap-policy.test.ts: a daemon-like heap (a live set, and objects that
 * live long enough to be promoted before they die), with or without providerd's heap
 * policy. Prints the peak heap size V8 committed, in bytes.
 */
import { applyDaemonHeapPolicy } from "../../src/provider/heap-policy.ts";

if (process.argv[2] === "apply") applyDaemonHeapPolicy();
const live = Array.from({ length: 300_000 }, (_, i) => ({ i, s: `v${i}`, a: [i, i + 1] }));
const ring: unknown[] = new Array(50_000);
let peak = 0;
for (let r = 0; r < 4_000_000; r++) {
  ring[r % ring.length] = { r, s: `x${r}`, b: new Array(8).fill(r) };
  if (r % 50_000 === 0) peak = Math.max(peak, process.memoryUsage().heapTotal);
}
console.log(JSON.stringify({ peak, live: live.length }));
