/**
 * Where a heap snapshot's module sources and compiled functions go, by package: the tool
 * behind providerd's idle-memory findings (bench/providerd-idle with BENCH_HEAP_SNAPSHOT_DIR
 * writes the snapshot). A script is a `code` node named by its URL or path with a `source`
 * edge; a function's share is its SharedFunctionInfo and the code objects under it (bytecode,
 * metadata, scope infos), each counted once, charged to the script it points to. Our own
 * bundle's chunks are listed one by one; node's builtins together (their sources are read
 * from the binary, so they cost the heap less than their size here).
 *
 * Usage: node --import tsx bench/heap-by-module.ts <Heap.….heapsnapshot> [top]
 */
import { readFileSync } from "node:fs";

interface Snapshot {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const [path, top] = process.argv.slice(2);
if (path === undefined) throw new Error("usage: heap-by-module <snapshot> [top]");
const { snapshot, nodes, edges, strings } = JSON.parse(readFileSync(path, "utf8")) as Snapshot;
const { meta } = snapshot;
const NF = meta.node_fields.length;
const EF = meta.edge_fields.length;
const [TYPE, NAME, SIZE, EDGES] = ["type", "name", "self_size", "edge_count"].map((f) =>
  meta.node_fields.indexOf(f),
) as [number, number, number, number];
const count = nodes.length / NF;
const firstEdge = new Uint32Array(count + 1);
for (let i = 0, e = 0; i < count; i++) {
  firstEdge[i] = e;
  e += nodes[i * NF + EDGES]! * EF;
}
firstEdge[count] = edges.length;

const type = (i: number) => meta.node_types[0][nodes[i * NF + TYPE]!]!;
const name = (i: number) => strings[nodes[i * NF + NAME]!]!;
const size = (i: number) => nodes[i * NF + SIZE]!;
/** A node's edges as [type, name, target]; element and hidden edges have no name. */
function* edgesOf(i: number): Generator<[string, string, number]> {
  for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += EF) {
    const t = meta.edge_types[0][edges[e]!]!;
    const n = t === "element" || t === "hidden" ? "" : strings[edges[e + 1]!]!;
    yield [t, n, edges[e + 2]! / NF];
  }
}

function packageOf(url: string): string {
  const npm = url.match(/node_modules\/((@[^/]+\/)?[^/]+)/);
  if (npm) return `npm ${npm[1]}`;
  if (url.includes("/dist/")) return `fred ${url.slice(url.lastIndexOf("/") + 1)}`;
  if (url.includes("/src/")) return `fred ${url.slice(url.indexOf("/src/") + 1)}`;
  return url.startsWith("node:") || !url.includes("/") ? "node (builtins)" : url;
}

const scripts = new Map<number, string>();
const rows = new Map<string, { source: number; code: number; scripts: number }>();
const row = (pkg: string) => {
  const r = rows.get(pkg) ?? { source: 0, code: 0, scripts: 0 };
  rows.set(pkg, r);
  return r;
};
let heap = 0;
for (let i = 0; i < count; i++) {
  heap += size(i);
  if (type(i) !== "code" || !/^(file:|node:|\/)|^[a-z_/]+$/.test(name(i))) continue;
  for (const [, n, to] of edgesOf(i))
    if (n === "source" && type(to).includes("string")) {
      scripts.set(i, packageOf(name(i)));
      const r = row(packageOf(name(i)));
      r.source += size(to);
      r.scripts++;
    }
}

const counted = new Uint8Array(count);
const codeUnder = (i: number, depth: number): number => {
  let sum = 0;
  for (const [t, n, to] of edgesOf(i)) {
    if (
      t === "weak" ||
      n === "map" ||
      n === "script" ||
      counted[to] ||
      type(to) !== "code" ||
      scripts.has(to)
    )
      continue;
    counted[to] = 1;
    sum += size(to) + (depth > 0 ? codeUnder(to, depth - 1) : 0);
  }
  return sum;
};
for (let i = 0; i < count; i++) {
  if (type(i) !== "code") continue;
  let script: string | undefined;
  for (const [, n, to] of edgesOf(i)) if (n === "script") script = scripts.get(to);
  if (script === undefined) continue;
  counted[i] = 1;
  row(script).code += size(i) + codeUnder(i, 3);
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(2).padStart(6);
const sorted = [...rows].sort((a, b) => b[1].source + b[1].code - (a[1].source + a[1].code));
const sum = (k: "source" | "code") => sorted.reduce((s, [, r]) => s + r[k], 0);
console.log(
  `heap ${mb(heap)} MB: module sources ${mb(sum("source"))} MB, functions ${mb(sum("code"))} MB, ${scripts.size} scripts`,
);
for (const [pkg, r] of sorted.slice(0, Number(top ?? 30)))
  console.log(
    `${mb(r.source + r.code)} MB  (source ${mb(r.source)}, code ${mb(r.code)}, ${r.scripts} scripts)  ${pkg}`,
  );
