/**
 * What a sampling heap profile holds, by allocation site: the tool behind the reconciler
 * sweep's heap figures (bench/reconciler-processes with BENCH_SNAPSHOT_DIR writes
 * sweep-peak.heapprofile, the sweep's live allocations at their largest). Two tables: by the
 * allocating function, and by the nearest frame in Fred's own code (src/), which names the
 * caller that keeps a library's objects.
 *
 * Usage: node --import tsx bench/reconciler-heap-summary.ts <sweep-peak.heapprofile> [top]
 */
import { readFileSync } from "node:fs";

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  callFrame: Frame;
  selfSize: number;
  children: ProfileNode[];
}

const [path, top] = process.argv.slice(2);
if (path === undefined) throw new Error("usage: reconciler-heap-summary <profile> [top]");
const { head } = JSON.parse(readFileSync(path, "utf8")) as { head: ProfileNode };

const name = (f: Frame) =>
  `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(src|node_modules)\//, "$1/") || "(native)"}:${f.lineNumber + 1}`;
// Bundled sources keep their src/ path only in source maps: a frame is ours unless a library's.
const ours = (f: Frame) => f.url !== "" && !f.url.includes("node_modules") && !f.url.startsWith("node:");

const bySite = new Map<string, number>();
const byOwn = new Map<string, number>();
let total = 0;
const walk = (node: ProfileNode, own: string) => {
  const here = ours(node.callFrame) ? name(node.callFrame) : own;
  if (node.selfSize > 0) {
    total += node.selfSize;
    const site = name(node.callFrame);
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    byOwn.set(here, (byOwn.get(here) ?? 0) + node.selfSize);
  }
  for (const c of node.children) walk(c, here);
};
walk(head, "(no Fred frame)");

const show = (title: string, m: Map<string, number>) => {
  console.log(`${title} (of ${(total / 2 ** 20).toFixed(1)} MB live)`);
  for (const [k, bytes] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(top ?? 25)))
    console.log(
      `${(bytes / 2 ** 20).toFixed(2).padStart(8)} MB ${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${k}`,
    );
};
show("live bytes by allocating function", bySite);
show("live bytes by nearest Fred frame", byOwn);
