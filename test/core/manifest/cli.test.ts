import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { type RunResult as Run, runFred } from "../../support/index.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const SKU = "0190f3a2-7c1e-7000-8000-0000000000aa";

/** Runs the real CLI as a child process, optionally feeding stdin. */
function fred(args: string[], stdin?: string): Promise<Run> {
  return runFred(args, { cwd: ROOT, input: stdin });
}

/** stdout must be exactly one JSON line. */
function jsonLine(run: Run): { valid: boolean; services?: string[]; problems?: Record<string, string>[] } {
  const lines = run.stdout.split("\n").filter((line) => line !== "");
  assert.equal(lines.length, 1, `stdout: ${run.stdout}`);
  return JSON.parse(lines[0] as string);
}

describe("fred manifest validate", () => {
  let dir = "";
  const file = (name: string) => join(dir, name);
  const stackDoc = JSON.stringify({
    services: {
      web: {
        image: "nginx:1.27",
        ports: { "80/tcp": { ingress: true } },
        depends_on: { db: { condition: "service_started" } },
      },
      db: { image: "postgres:16" },
    },
  });

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "fred-manifest-cli-"));
    writeFileSync(file("stack.json"), stackDoc);
    writeFileSync(
      file("bad.json"),
      JSON.stringify({ image: "", volumes: ["/data"], ports: { "80/tcp": { host_port: 8080 } } }),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("exits 0 and prints the services for a valid manifest", async () => {
    const run = await fred(["manifest", "validate", file("stack.json")]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(jsonLine(run), { valid: true, services: ["web", "db"] });
    assert.match(run.stderr, /valid stack manifest/);
  });

  it("exits 1 and lists every problem: JSON on stdout, '<pointer>: <message>' on stderr", async () => {
    const run = await fred(["manifest", "validate", file("bad.json")]);
    assert.equal(run.code, 1);
    const out = jsonLine(run);
    assert.equal(out.valid, false);
    assert.deepEqual(out.problems?.map((p) => p.path).sort(), [
      "/image",
      "/ports/80~1tcp/host_port",
      "/volumes",
    ]);
    for (const problem of out.problems ?? [])
      assert.ok(run.stderr.includes(`${problem.path}: ${problem.message}\n`), run.stderr);
  });

  it("--json keeps stderr empty", async () => {
    const run = await fred(["manifest", "validate", "--json", file("bad.json")]);
    assert.equal(run.code, 1);
    assert.equal(run.stderr, "");
    assert.equal(jsonLine(run).problems?.length, 3);
  });

  it("--items checks the 1:1 match with the lease items", async () => {
    const items = (...names: string[]) =>
      JSON.stringify(names.map((service_name) => ({ sku_uuid: SKU, quantity: 1, service_name })));
    const fits = await fred([
      "manifest",
      "validate",
      file("stack.json"),
      "--items",
      items("db", "web"),
      "--json",
    ]);
    assert.equal(fits.code, 0);
    const misfit = await fred([
      "manifest",
      "validate",
      file("stack.json"),
      "--items",
      items("web", "cache"),
      "--json",
    ]);
    assert.equal(misfit.code, 1);
    assert.deepEqual(jsonLine(misfit).problems, [
      { path: "/services/db", message: 'manifest service "db" has no matching lease item' },
      {
        path: "/1",
        document: "items",
        message: 'lease item service "cache" has no matching manifest service',
      },
    ]);
  });

  it("reports unusable --items text and bad items", async () => {
    const broken = await fred(["manifest", "validate", file("stack.json"), "--items", "[{", "--json"]);
    assert.equal(broken.code, 1);
    assert.match(jsonLine(broken).problems?.[0]?.message ?? "", /--items is not usable JSON/);
    const bad = await fred([
      "manifest",
      "validate",
      file("stack.json"),
      "--items",
      '[{"sku_uuid":"x","quantity":0}]',
    ]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--items \/0\/quantity: quantity must be between 1 and/);
  });

  it("exits 1 with a clear message for a file it cannot read", async () => {
    const run = await fred(["manifest", "validate", file("missing.json")]);
    assert.equal(run.code, 1);
    assert.match(
      jsonLine(run).problems?.[0]?.message ?? "",
      /cannot read manifest file .*missing\.json.*ENOENT/,
    );
    assert.match(run.stderr, /cannot read manifest file/);
  });

  it("refuses a file over --max-bytes and reads standard input for '-'", async () => {
    const big = await fred(["manifest", "validate", file("stack.json"), "--max-bytes", "100", "--json"]);
    assert.equal(big.code, 1);
    assert.deepEqual(jsonLine(big).problems, [{ path: "", message: "manifest is larger than 100 bytes" }]);
    const piped = await fred(["manifest", "validate", "-", "--json"], stackDoc);
    assert.equal(piped.code, 0, piped.stdout);
    assert.deepEqual(jsonLine(piped), { valid: true, services: ["web", "db"] });
  });

  it("has --help with examples", async () => {
    const run = await fred(["manifest", "validate", "--help"]);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /Examples:\n\s+\$ fred manifest validate/);
  });
});
