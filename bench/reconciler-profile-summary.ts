/**
 * Self time by function (and by source file) of a V8 CPU profile: how the reconciler sweep's
 * time was split (bench/reconciler-processes, BENCH_SNAPSHOT_DIR writes sweep.cpuprofile).
 *
 * Usage: node --import tsx bench/reconciler-profile-summary.ts <sweep.cpuprofile> [top]
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [path, top] = process.argv.slice(2);
if (path === undefined) throw new Error("usage: reconciler-profile-summary <profile> [top]");
const p = JSON.parse(readFileSync(path, "utf8")) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const fns = new Map<string, number>();
const files = new Map<string, number>();
let total = 0;
p.samples.forEach((id, i) => {
  const f = byId.get(id)!.callFrame;
  const dt = p.timeDeltas[i] ?? 0;
  total += dt;
  const file = f.url.replace(/^.*\/(src|node_modules)\//, "$1/") || "(native)";
  const fn = `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`;
  fns.set(fn, (fns.get(fn) ?? 0) + dt);
  files.set(file, (files.get(file) ?? 0) + dt);
});
const show = (title: string, m: Map<string, number>) => {
  console.log(`${title} (of ${(total / 1000).toFixed(0)} ms)`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(top ?? 30)))
    console.log(
      `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`,
    );
};
show("self time by function", fns);
show("self time by file", files);
