#!/usr/bin/env node
// Runs every benchmark under bench/ (files named *.bench.ts), one process each, in order.
// Each benchmark prints its figures as JSON lines on stdout.
// Usage: npm run bench [-- <name-substring> ...]
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const filters = process.argv.slice(2);
const files = readdirSync("bench")
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
// Benchmarks measure the daemons as they ship: the V8 flags the systemd units and the image
// set in NODE_OPTIONS (test/deploy checks the three agree), inherited by what a bench spawns.
const DAEMON_NODE_OPTIONS = "--max-semi-space-size=16";
// providerd's own unit (and compose service) also fixes malloc's mmap threshold; the e2e
// stack (test/provider/e2e/stack.ts) gives FRED_ENV_PROVIDERD to providerd alone.
const PROVIDERD_GLIBC_TUNABLES = "glibc.malloc.mmap_threshold=131072";
// And node's own flags, which node refuses in NODE_OPTIONS: the unit and the compose service
// pass them on its command line (the stack gives FRED_NODE_FLAGS_PROVIDERD to providerd alone;
// flags given there too come after these, and a V8 flag given twice takes the last value).
const PROVIDERD_NODE_FLAGS = "--min-semi-space-size=16";
// The units and the image also keep V8's bytecode of fred's modules between runs
// (NODE_COMPILE_CACHE): a daemon restarted on this machine starts from it, and so does every
// process a bench starts after the first run. NODE_DISABLE_COMPILE_CACHE=1 measures cold starts.
// In this checkout, not a shared temp directory: V8 runs the bytecode it finds there.
const COMPILE_CACHE =
  process.env.NODE_COMPILE_CACHE ??
  fileURLToPath(new URL("../node_modules/.cache/fred-bench-compile-cache", import.meta.url));
const env = {
  ...process.env,
  NODE_COMPILE_CACHE: COMPILE_CACHE,
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} ${DAEMON_NODE_OPTIONS}`.trim(),
  FRED_ENV_PROVIDERD: process.env.FRED_ENV_PROVIDERD ?? `GLIBC_TUNABLES=${PROVIDERD_GLIBC_TUNABLES}`,
  FRED_NODE_FLAGS_PROVIDERD: `${PROVIDERD_NODE_FLAGS} ${process.env.FRED_NODE_FLAGS_PROVIDERD ?? ""}`.trim(),
};
let failed = 0;
for (const file of files) {
  console.error(`# bench/${file}`);
  const r = spawnSync(process.execPath, ["--import", "tsx", `bench/${file}`], { stdio: "inherit", env });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
