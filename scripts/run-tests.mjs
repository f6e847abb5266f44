#!/usr/bin/env node
// Runs every test file under test/ with node:test through tsx.
// We collect the files ourselves: Node 20 had no glob expansion in --test, and one list
// keeps the path-substring filter below the same on every Node (22, 24).
// Usage: npm test [-- <path-substring> ...]   (filters the files by substring)
// Before a run that includes Docker suites (files that import test/support/docker.ts), the
// btrfs mount and test images they need are prepared when this runs as root with the tools,
// or one line says which suites skip and how to enable them (test/support/docker-env.ts).
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { tsImport } from "tsx/esm/api";

function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...collect(path));
    else if (name.endsWith(".test.ts")) out.push(relative(process.cwd(), path));
  }
  return out;
}

const filters = process.argv.slice(2);
const files = collect("test").filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)));
if (files.length === 0) {
  console.error(`no test files match ${filters.join(" ")}`);
  process.exit(1);
}
if (files.some((f) => readFileSync(f, "utf8").includes("support/docker.ts"))) {
  const { prepareDockerTests } = await tsImport("../test/support/docker-env.ts", import.meta.url);
  const line = await prepareDockerTests();
  if (line) console.error(line);
}
const concurrency = process.env.TEST_CONCURRENCY ?? "2";
const child = spawn(
  process.execPath,
  ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, ...files],
  { stdio: "inherit" },
);
child.on("exit", (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
