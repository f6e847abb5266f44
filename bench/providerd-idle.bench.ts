/**
 * providerd at rest: a devnet making a block every second (BENCH_BLOCK_TIME), one mock
 * backend and providerd with no leases. Once /readyz
 * answers 200 and the daemon has settled (15 s of block and sweep ticks), prints its
 * resident memory (anonymous: heaps; file: the node binary and libraries, split by mapping), from /proc. Goal (#37):
 * idle RSS ≤ 90 MB. Prints one JSON line.
 *
 * Usage: npm run bench -- providerd-idle
 * Digging in: BENCH_HEAP_SNAPSHOT_DIR=/tmp/idle writes providerd's heap snapshot there
 * (Heap.*.heapsnapshot; open it in Chrome DevTools, Memory tab) before it is stopped.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { Stack } from "../test/provider/e2e/stack.ts";

// V8's memory reducer runs a full collection some seconds after start: the idle figures are
// taken after it, CPU over a window of its own.
const SETTLE_MS = 15_000;
const CPU_WINDOW_MS = 10_000;

/** A /proc/<pid>/status field (VmRSS, VmHWM, RssAnon, RssFile), in MB. */
function statusMb(pid: number | undefined, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  return line === null ? 0 : Math.round(Number(line[1]) / 1024);
}

/**
 * Where the file-backed RSS lives (from /proc/<pid>/smaps), in MB: node's own binary by
 * segment (`text`: its code; `rodata`: read-only data, ICU's tables among it), and every
 * other mapped file (shared libraries). These pages are the binary's, shared with any other
 * node process; no JavaScript of ours can give them back.
 */
function fileRssMb(pid: number | undefined): { node_text: number; node_rodata: number; other_files: number } {
  const kb = { node_text: 0, node_rodata: 0, other_files: 0 };
  let bucket: keyof typeof kb | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = line.match(/^[0-9a-f]+-[0-9a-f]+ (\S{4}) \S+ \S+ \S+\s+(.*)$/);
    if (head !== null) {
      const [, perms, path] = head as unknown as [string, string, string];
      bucket = !path.startsWith("/")
        ? undefined
        : path.endsWith("/node")
          ? perms.includes("x")
            ? "node_text"
            : perms.startsWith("r--")
              ? "node_rodata"
              : undefined
          : "other_files";
      continue;
    }
    const rss = line.match(/^Rss:\s+(\d+) kB/);
    if (rss !== null && bucket !== undefined) kb[bucket] += Number(rss[1]);
  }
  const mb = (v: number) => Math.round(v / 1024);
  return { node_text: mb(kb.node_text), node_rodata: mb(kb.node_rodata), other_files: mb(kb.other_files) };
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const snapshotDir = process.env.BENCH_HEAP_SNAPSHOT_DIR;
if (snapshotDir !== undefined) {
  // SIGUSR1 is providerd's "sweep now"; SIGUSR2 is free for V8's snapshot-on-signal.
  process.env.FRED_NODE_FLAGS_PROVIDERD = [
    process.env.FRED_NODE_FLAGS_PROVIDERD ?? "",
    "--heapsnapshot-signal=SIGUSR2",
    `--diagnostic-dir=${snapshotDir}`,
  ].join(" ");
}

const stack = new Stack();
try {
  // A block every second, as on the Manifest network: a chain that makes no block would
  // have the event feed reconnect (and sweep) every 15 s, which no provider sees.
  await stack.start(() => [{}], undefined, ["--block-time", process.env.BENCH_BLOCK_TIME ?? "1s"]);
  await stack.startProviderd();
  const pid = stack.providerd!.child.pid;
  const rssAtReady = statusMb(pid, "VmRSS");
  await sleep(SETTLE_MS);
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  await sleep(CPU_WINDOW_MS);
  const idleCpu = (cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000);
  const figures = {
    bench: "providerd_idle",
    node: process.version,
    providerd_rss_at_ready_mb: rssAtReady,
    providerd_rss_mb: statusMb(pid, "VmRSS"),
    providerd_rss_anon_mb: statusMb(pid, "RssAnon"),
    providerd_rss_file_mb: statusMb(pid, "RssFile"),
    providerd_rss_file_by_mapping_mb: fileRssMb(pid),
    providerd_peak_rss_mb: statusMb(pid, "VmHWM"),
    providerd_idle_cpu_per_s: Number(idleCpu.toFixed(4)),
    goal_rss_mb: 90,
    load1: Number(loadavg()[0]!.toFixed(2)),
  };
  if (snapshotDir !== undefined) {
    process.kill(pid!, "SIGUSR2");
    await sleep(5_000);
    console.error(`providerd's heap snapshot is in ${snapshotDir} (Heap.*.heapsnapshot)`);
  }
  console.log(JSON.stringify(figures));
} finally {
  await stack.close();
}
