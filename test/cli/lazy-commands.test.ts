import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { runFred } from "../support/process.ts";

// A module hook that writes down every module the process loads, so a test sees what a
// command really brings into memory (not what its imports say it might), and at exit node's
// own modules (process.moduleLoadList: "NativeModule internal/…").
const dir = mkdtempSync(join(tmpdir(), "fred-lazy-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const hook = join(dir, "record-loads.mjs");
writeFileSync(
  hook,
  `import { registerHooks } from "node:module";
import { appendFileSync } from "node:fs";
registerHooks({ load(url, context, next) { appendFileSync(process.env.LOADED_FILE, url + "\\n"); return next(url, context); } });
process.on("exit", () => appendFileSync(process.env.LOADED_FILE, process.moduleLoadList.map((m) => "builtin " + m + "\\n").join("")));
`,
);

/**
 * The sources (src/… paths, from the bundle's per-module comments), packages, package files
 * (`undici/index.js`) and node's own modules (`internal/deps/undici/undici`) `fred <args>` loads.
 */
async function loadedBy(
  args: string[],
): Promise<{ sources: Set<string>; packages: Set<string>; files: Set<string>; builtins: Set<string> }> {
  const list = join(dir, `${args.join("-")}.txt`);
  const r = await runFred(args, { env: { NODE_OPTIONS: `--import ${hook}`, LOADED_FILE: list } });
  assert.equal(r.code, 0, r.stderr);
  const sources = new Set<string>();
  const packages = new Set<string>();
  const files = new Set<string>();
  const builtins = new Set<string>();
  for (const url of readFileSync(list, "utf8").trim().split("\n")) {
    if (url.startsWith("builtin ")) {
      builtins.add(url.replace(/^builtin (NativeModule |Internal Binding )?/, ""));
      continue;
    }
    const pkg = url.match(/\/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
    if (pkg !== null) {
      packages.add(pkg[1]!);
      files.add(url.replace(/^.*\/node_modules\//, ""));
    } else if (/\/(dist|lib)\/fred-?[^/]*\.mjs$/.test(url) || url.endsWith("/lib/fred.mjs")) {
      for (const m of readFileSync(fileURLToPath(url), "utf8").matchAll(/^\/\/ (src\/\S+\.ts)$/gm))
        sources.add(m[1]!);
    }
  }
  return { sources, packages, files, builtins };
}

const under = (sources: Set<string>, prefix: string) => [...sources].filter((s) => s.startsWith(prefix));

describe("each command loads only its own modules", () => {
  it("fred --help loads every command (the control: the check below can fail)", async () => {
    const { sources, packages } = await loadedBy(["--help"]);
    assert.ok(under(sources, "src/devnet/").length > 0, "no devnet module in the whole CLI");
    assert.ok(under(sources, "src/cli/loadtest").length > 0, "no load test module in the whole CLI");
    assert.ok(packages.has("tar-stream"), [...packages].join(" "));
  });

  it("fred providerd loads neither the devnet, the lease tools, the load test nor fred up", async () => {
    const { sources, packages } = await loadedBy(["providerd", "--help"]);
    assert.ok(sources.has("src/provider/main.ts"), "providerd's own modules were not loaded");
    for (const other of [
      "src/devnet/",
      "src/cli/lease/",
      "src/cli/loadtest",
      "src/cli/up/",
      "src/backend/docker/",
    ]) {
      assert.deepEqual(under(sources, other), [], `fred providerd loaded ${other}`);
    }
    assert.ok(!packages.has("tar-stream"), "fred providerd loaded tar-stream");
  });

  // docs/benchmarks.md, "Idle memory": what providerd uses only to send a transaction, or
  // never, stays out of its resident set.
  it("fred providerd loads none of cosmjs's clients nor the fetch side of undici", async () => {
    const { sources, packages, files, builtins } = await loadedBy(["providerd", "--help"]);
    // The controls: the chain client and the backend transport were loaded.
    assert.ok(sources.has("src/chain/cosmos/tx-pipeline.ts"), "the chain client was not loaded");
    assert.ok(packages.has("cosmjs-types"), [...packages].join(" "));
    assert.ok(files.has("undici/lib/dispatcher/pool.js"), "undici's Pool was not loaded");
    assert.ok(builtins.has("http"), "node:http was not loaded");
    for (const unused of [
      "@cosmjs/stargate",
      "@cosmjs/proto-signing",
      "@cosmjs/amino",
      "@cosmjs/tendermint-rpc",
      "@cosmjs/crypto",
      "xstream",
    ])
      assert.ok(!packages.has(unused), `fred providerd loaded ${unused}`);
    assert.ok(
      !files.has("undici/index.js"),
      "fred providerd loaded undici's index (fetch, WebSocket, caches)",
    );
    assert.ok(!builtins.has("internal/deps/undici/undici"), "fred providerd loaded node's bundled undici");
  });

  it("fred token loads no daemon (no HTTP server framework, no SQLite)", async () => {
    const { sources, packages } = await loadedBy(["token", "--help"]);
    assert.deepEqual(under(sources, "src/provider/"), []);
    for (const daemonOnly of ["fastify", "better-sqlite3"]) assert.ok(!packages.has(daemonOnly), daemonOnly);
  });
});

describe("the bundle a process runs", () => {
  it("is ASCII only, so V8 keeps each module's source at one byte a character", async () => {
    const r = await runFred(["--version"], {
      env: { NODE_OPTIONS: `--import ${hook}`, LOADED_FILE: join(dir, "version.txt") },
    });
    assert.equal(r.code, 0, r.stderr);
    const ours = readFileSync(join(dir, "version.txt"), "utf8")
      .trim()
      .split("\n")
      .filter((url) => /\/(dist|lib)\/fred[^/]*\.mjs$/.test(url));
    assert.ok(ours.length > 0, "the CLI bundle was not loaded");
    for (const url of ours) {
      const text = readFileSync(fileURLToPath(url), "utf8");
      const at = text.search(/[^\x00-\x7f]/);
      assert.equal(at, -1, `${url} has a non-ASCII character: ${text.slice(Math.max(0, at - 40), at + 10)}`);
    }
  });
});
