import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { REPO_ROOT, runFred } from "../support/index.ts";

/**
 * What ships under deploy/ must work where an operator puts it: the systemd units pass
 * `systemd-analyze verify`, the Prometheus rules pass `promtool check rules` and their unit
 * tests (`*.test.yml`) pass `promtool test rules`, the rules name only metrics Fred exports,
 * and every fred command a unit runs parses. CI installs both tools
 * (REQUIRE_DEPLOY_TOOLS=1 makes a missing tool a failure instead of a skip).
 */
const REQUIRED = process.env.REQUIRE_DEPLOY_TOOLS === "1";
const DEPLOY = join(REPO_ROOT, "deploy");
const units = readdirSync(join(DEPLOY, "systemd")).filter((f) => f.endsWith(".service"));
const promFiles = readdirSync(join(DEPLOY, "prometheus"));
const ruleTests = promFiles.filter((f) => f.endsWith(".test.yml"));
const rules = promFiles.filter((f) => f.endsWith(".yml") && !ruleTests.includes(f));

function tool(name: string): boolean {
  const found = spawnSync("sh", ["-c", `command -v ${name}`]).status === 0;
  if (!found && REQUIRED)
    throw new Error(`${name} is required here (REQUIRE_DEPLOY_TOOLS=1) but not installed`);
  return found;
}

/**
 * Every fred_* metric name written as a string anywhere in src/: `name: "fred_…"` in a
 * prom-client constructor, and the names the scrape-time helpers (src/chain/metrics.ts)
 * take as their first argument.
 */
function exportedMetrics(): Set<string> {
  const out = execFileSync("grep", ["-rhoE", '"fred_[a-z0-9_]+"', join(REPO_ROOT, "src")], {
    encoding: "utf8",
  });
  return new Set([...out.matchAll(/"(fred_[a-z0-9_]+)"/g)].map((m) => m[1] as string));
}

/** A histogram's series carry its name plus _bucket, _count or _sum. */
function isExported(name: string, known: Set<string>): boolean {
  return known.has(name) || known.has(name.replace(/_(bucket|count|sum)$/, ""));
}

describe("deploy/ files", () => {
  it("ships units and rules", () => {
    assert.ok(units.length >= 2, "expected the providerd and Docker backend units");
    assert.ok(rules.length >= 1);
  });

  for (const unit of units) {
    it(`${unit} passes systemd-analyze verify without warnings`, { skip: !tool("systemd-analyze") }, () => {
      const r = spawnSync("systemd-analyze", ["verify", join(DEPLOY, "systemd", unit)], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr.trim(), "", r.stderr);
    });

    it(`${unit} runs fred commands that exist`, async () => {
      const text = readFileSync(join(DEPLOY, "systemd", unit), "utf8");
      const commands = [
        ...text.matchAll(/^Exec\w+=\/usr\/bin\/node (?:--[\w-]+=\S+ )*\/opt\/fred\/bin\/fred\.js (.+)$/gm),
      ].map((m) => (m[1] as string).split(/\s+/));
      assert.ok(commands.length >= 1, `${unit} runs no fred command`);
      for (const args of commands) {
        // Keep the subcommand words (up to the first flag) and ask for their help.
        const words = args.slice(
          0,
          args.findIndex((a) => a.startsWith("-")),
        );
        const r = await runFred([...words, "--help"]);
        assert.equal(r.code, 0, `fred ${words.join(" ")} --help: ${r.stderr}`);
        for (const flag of args.filter((a) => a.startsWith("-")))
          assert.ok(r.stdout.includes(flag), `fred ${words.join(" ")} has no ${flag}`);
      }
    });
  }

  it("the units, the image and the benchmarks run the daemons with the same NODE_OPTIONS", () => {
    const image = /^ENV NODE_OPTIONS=(.+)$/m.exec(readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8"))?.[1];
    assert.ok(image, "the Dockerfile sets no NODE_OPTIONS");
    for (const unit of units) {
      const text = readFileSync(join(DEPLOY, "systemd", unit), "utf8");
      assert.equal(/^Environment=NODE_OPTIONS=(.+)$/m.exec(text)?.[1], image, unit);
    }
    const bench = readFileSync(join(REPO_ROOT, "scripts", "run-bench.mjs"), "utf8");
    assert.equal(/DAEMON_NODE_OPTIONS = "([^"]+)"/.exec(bench)?.[1], image, "scripts/run-bench.mjs");
  });

  it("the units and the image keep V8's compile cache in a directory of their own; the benchmarks too", () => {
    for (const unit of units) {
      const text = readFileSync(join(DEPLOY, "systemd", unit), "utf8");
      const dir = /^Environment=NODE_COMPILE_CACHE=(.+)$/m.exec(text)?.[1];
      const owned = /^CacheDirectory=(.+)$/m.exec(text)?.[1];
      assert.ok(dir !== undefined && owned !== undefined, `${unit}: NODE_COMPILE_CACHE and CacheDirectory`);
      // Under the service's own cache directory: systemd creates it for the service's user
      // and makes it writable under ProtectSystem=strict.
      assert.ok(dir.startsWith(`/var/cache/${owned}/`), `${unit}: ${dir} is not under /var/cache/${owned}`);
    }
    const dockerfile = readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8");
    const imageDir = /^ENV NODE_COMPILE_CACHE=(.+)$/m.exec(dockerfile)?.[1];
    assert.ok(imageDir?.startsWith("/var/cache/fred/"), "the Dockerfile's NODE_COMPILE_CACHE");
    assert.match(dockerfile, /install -d -o fred -g fred -m 0700 [^\n]*\/var\/cache\/fred/);
    const bench = readFileSync(join(REPO_ROOT, "scripts", "run-bench.mjs"), "utf8");
    assert.match(bench, /NODE_COMPILE_CACHE: COMPILE_CACHE/);
  });

  it("fred started with NODE_COMPILE_CACHE leaves V8's code cache there for its next start", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fred-compile-cache-"));
    try {
      const first = await runFred(["providerd", "--help"], { env: { NODE_COMPILE_CACHE: dir } });
      assert.equal(first.code, 0, first.stderr);
      const entries = (sub: string[]) => sub.flatMap((d) => readdirSync(join(dir, d)));
      const versions = readdirSync(dir);
      assert.equal(versions.length, 1, "one directory for this node's version");
      assert.ok(entries(versions).length > 0, "no cache entries written");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the providerd unit, its compose service and the benchmarks fix the same malloc tunables", () => {
    const unit = readFileSync(join(DEPLOY, "systemd", "fred-providerd.service"), "utf8");
    const tunables = /^Environment=GLIBC_TUNABLES=(.+)$/m.exec(unit)?.[1];
    assert.ok(tunables, "fred-providerd.service sets no GLIBC_TUNABLES");
    const compose = parse(readFileSync(join(DEPLOY, "compose.yaml"), "utf8")) as {
      services: Record<string, { environment?: Record<string, string> }>;
    };
    assert.equal(compose.services.providerd?.environment?.GLIBC_TUNABLES, tunables, "deploy/compose.yaml");
    const bench = readFileSync(join(REPO_ROOT, "scripts", "run-bench.mjs"), "utf8");
    assert.equal(/PROVIDERD_GLIBC_TUNABLES = "([^"]+)"/.exec(bench)?.[1], tunables, "scripts/run-bench.mjs");
  });

  it("the providerd unit, its compose service and the benchmarks give node the same flags of its own", () => {
    const unit = readFileSync(join(DEPLOY, "systemd", "fred-providerd.service"), "utf8");
    const flags =
      /^ExecStart=\/usr\/bin\/node ((?:--[\w-]+=\S+ ?)+) \/opt\/fred\/bin\/fred\.js providerd /m.exec(
        unit,
      )?.[1];
    assert.ok(flags, "fred-providerd.service starts node without flags of its own");
    const compose = parse(readFileSync(join(DEPLOY, "compose.yaml"), "utf8")) as {
      services: Record<string, { entrypoint?: string[] }>;
    };
    const entrypoint = compose.services.providerd?.entrypoint ?? [];
    assert.deepEqual(entrypoint.slice(0, 3), ["tini", "--", "node"], "deploy/compose.yaml");
    assert.equal(entrypoint.slice(3, -1).join(" "), flags, "deploy/compose.yaml");
    const bench = readFileSync(join(REPO_ROOT, "scripts", "run-bench.mjs"), "utf8");
    assert.equal(/PROVIDERD_NODE_FLAGS = "([^"]+)"/.exec(bench)?.[1], flags, "scripts/run-bench.mjs");
  });

  // `systemctl reload` must do what the daemon's own help calls a reload, nothing else.
  for (const unit of units) {
    const text = readFileSync(join(DEPLOY, "systemd", unit), "utf8");
    const reload = /^ExecReload=\/bin\/kill -(\w+) \$MAINPID$/m.exec(text);
    if (!/^ExecReload=/m.test(text)) continue;
    it(`${unit}: ExecReload sends the signal fred documents as a reload`, async () => {
      assert.ok(reload, `${unit}: ExecReload is not \`/bin/kill -SIG $MAINPID\``);
      const start = /^ExecStart=\/usr\/bin\/node (?:--[\w-]+=\S+ )*\/opt\/fred\/bin\/fred\.js (.+)$/m.exec(
        text,
      );
      assert.ok(start, `${unit} has no fred ExecStart`);
      const args = (start[1] as string).split(/\s+/);
      const words = args.slice(
        0,
        args.findIndex((a) => a.startsWith("-")),
      );
      const r = await runFred([...words, "--help"]);
      assert.equal(r.code, 0, r.stderr);
      const help = r.stdout.replace(/\s+/g, " ");
      assert.ok(
        help.includes(`SIG${reload[1]} (systemctl reload) reloads`),
        `fred ${words.join(" ")} --help does not say that SIG${reload[1]} reloads`,
      );
    });
  }

  for (const file of rules) {
    it(`${file} passes promtool check rules`, { skip: !tool("promtool") }, () => {
      const r = spawnSync("promtool", ["check", "rules", join(DEPLOY, "prometheus", file)], {
        encoding: "utf8",
      });
      assert.equal(r.status, 0, r.stdout + r.stderr);
    });

    it(`${file} names only metrics Fred exports`, () => {
      const doc = parse(readFileSync(join(DEPLOY, "prometheus", file), "utf8")) as {
        groups: { rules: { alert: string; expr: string }[] }[];
      };
      const known = exportedMetrics();
      const missing = new Set<string>();
      for (const rule of doc.groups.flatMap((g) => g.rules)) {
        const names = [...rule.expr.matchAll(/\bfred_[a-z0-9_]+/g)].map((m) => m[0]);
        assert.ok(names.length > 0, `${rule.alert} uses no fred metric`);
        for (const n of names) if (!isExported(n, known)) missing.add(`${rule.alert}: ${n}`);
      }
      // All at once, so one run lists every name a rule needs and nothing in src/ exports.
      assert.deepEqual(
        [...missing],
        [],
        `rules use metrics nothing in src/ exports:\n${[...missing].join("\n")}`,
      );
    });
  }

  it("ships unit tests for the rules", () => assert.ok(ruleTests.length >= 1));

  for (const file of ruleTests) {
    it(`${file} passes promtool test rules`, { skip: !tool("promtool") }, () => {
      // promtool resolves the test's rule_files relative to the test file.
      const r = spawnSync("promtool", ["test", "rules", join(DEPLOY, "prometheus", file)], {
        encoding: "utf8",
      });
      assert.equal(r.status, 0, r.stdout + r.stderr);
    });
  }
});
