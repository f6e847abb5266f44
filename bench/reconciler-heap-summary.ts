/**
 * What a V8 heap snapshot holds, by kind of object, minus what a baseline snapshot held: the
 * tool behind the reconciler sweep's heap figures (bench/reconciler-processes, BENCH_SNAPSHOT_DIR).
 * Plain objects are told apart by their first property names ("{uuid,state,skus}"), so the
 * reconciler's per-lease shapes show up one by one; strings are grouped by kind.
 *
 * Usage: node --import tsx bench/reconciler-heap-summary.ts <during.heapsnapshot> [<before.heapsnapshot>] [top]
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

/** Bytes and count by group name. */
function summarise(path: string): Map<string, { bytes: number; count: number }> {
  const s = JSON.parse(readFileSync(path, "utf8")) as Snapshot;
  const { node_fields, node_types, edge_fields, edge_types } = s.snapshot.meta;
  const nf = node_fields.length;
  const ef = edge_fields.length;
  const [typeAt, nameAt, sizeAt, edgesAt] = ["type", "name", "self_size", "edge_count"].map((f) =>
    node_fields.indexOf(f),
  ) as [number, number, number, number];
  const [etypeAt, enameAt] = ["type", "name_or_index"].map((f) => edge_fields.indexOf(f)) as [number, number];
  const types = node_types[0];
  const etypes = edge_types[0];
  const out = new Map<string, { bytes: number; count: number }>();
  let edge = 0;
  for (let n = 0; n < s.nodes.length; n += nf) {
    const type = types[s.nodes[n + typeAt]!]!;
    const edges = s.nodes[n + edgesAt]!;
    let group = `${type}:${s.strings[s.nodes[n + nameAt]!]}`;
    if (type.includes("string")) group = type;
    else if (type === "number") group = "heap number";
    else if (type === "object" && group === "object:Object") {
      const props: string[] = [];
      for (let e = edge; e < edge + edges * ef && props.length < 4; e += ef) {
        if (etypes[s.edges[e + etypeAt]!] === "property") props.push(s.strings[s.edges[e + enameAt]!]!);
      }
      group = `{${props.join(",")}}`;
    }
    edge += edges * ef;
    const g = out.get(group) ?? { bytes: 0, count: 0 };
    g.bytes += s.nodes[n + sizeAt]!;
    g.count++;
    out.set(group, g);
  }
  return out;
}

const [during, before, top] = process.argv.slice(2);
if (during === undefined) throw new Error("usage: reconciler-heap-summary <during> [<before>] [top]");
const now = summarise(during);
const base = before === undefined ? new Map() : summarise(before);
const rows = [...now].map(([group, g]) => {
  const b = base.get(group) ?? { bytes: 0, count: 0 };
  return { group, bytes: g.bytes - b.bytes, count: g.count - b.count };
});
rows.sort((a, b) => b.bytes - a.bytes);
const total = rows.reduce((sum, r) => sum + r.bytes, 0);
console.log(`total ${(total / 2 ** 20).toFixed(1)} MB more than the baseline`);
for (const r of rows.slice(0, Number(top ?? 40)))
  console.log(`${(r.bytes / 2 ** 20).toFixed(2).padStart(8)} MB ${String(r.count).padStart(9)}  ${r.group}`);
