import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { BACKEND_BODY_CODES, ERROR_CODES, type ErrorCodeInfo } from "../../src/core/error-codes.ts";
import { FredError, isFredError } from "../../src/core/errors.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The rows of every markdown table in docs/errors.md whose first cell is a `code`. */
function docRows(): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of readFileSync(join(ROOT, "docs/errors.md"), "utf8").split("\n")) {
    const m = /^\|\s*`([^`]+)`\s*\|(.*)\|\s*$/.exec(line);
    if (!m) continue;
    assert.ok(!rows.has(m[1] as string), `docs/errors.md lists ${m[1]} twice`);
    rows.set(
      m[1] as string,
      (m[2] as string).split("|").map((c) => c.trim()),
    );
  }
  return rows;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith(".ts") ? [path] : [];
  });
}

describe("error code table", () => {
  const docs = docRows();

  it("docs/errors.md lists exactly the codes of src/core/error-codes.ts, with the same columns", () => {
    const table = Object.entries(ERROR_CODES as Record<string, ErrorCodeInfo>);
    for (const [code, info] of table) {
      const row = docs.get(code);
      assert.ok(row, `${code} is in src/core/error-codes.ts but not in docs/errors.md`);
      const retryable = info.retryable === undefined ? "varies" : info.retryable ? "yes" : "no";
      assert.deepEqual(
        row,
        [retryable, info.http === undefined ? "—" : String(info.http), info.meaning],
        `docs/errors.md row for ${code} differs from the table (retryable | HTTP | meaning)`,
      );
    }
    for (const [code, info] of Object.entries(BACKEND_BODY_CODES)) {
      assert.deepEqual(docs.get(code), [`\`${info.field}\``, info.meaning], `docs/errors.md row for ${code}`);
    }
    const known = new Set([...Object.keys(ERROR_CODES), ...Object.keys(BACKEND_BODY_CODES)]);
    const extra = [...docs.keys()].filter((c) => !known.has(c));
    assert.deepEqual(extra, [], "docs/errors.md lists codes the table does not have");
  });

  it("every code spelled in src/ is in the table, and every table code is raised somewhere", () => {
    const spelled = new Set<string>();
    for (const file of sourceFiles(join(ROOT, "src"))) {
      if (file.endsWith("core/error-codes.ts")) continue;
      for (const m of readFileSync(file, "utf8").matchAll(/["'`](ERR_[A-Z0-9_]+)["'`]/g))
        spelled.add(m[1] as string);
    }
    // Codes Node.js itself raises, which src/ only compares against.
    const nodeCodes = new Set(["ERR_HTTP_REQUEST_TIMEOUT"]);
    const unknown = [...spelled].filter((c) => !(c in ERROR_CODES) && !nodeCodes.has(c));
    assert.deepEqual(unknown, [], "codes used in src/ but missing from src/core/error-codes.ts");
    // ERR_CONTRACT_<status> is built from the ContractError status (kit/errors.ts), so it
    // never appears spelled out.
    const unused = Object.keys(ERROR_CODES).filter((c) => !spelled.has(c) && !c.startsWith("ERR_CONTRACT_"));
    assert.deepEqual(unused, [], "codes in the table that nothing raises");
  });

  it("a FredError takes the table's fixed retryability unless the raising site says otherwise", () => {
    assert.equal(new FredError("ERR_BACKEND_TIMEOUT", "slow").retryable, true);
    assert.equal(new FredError("ERR_CONFIG", "bad").retryable, false);
    assert.equal(new FredError("ERR_BACKEND_STATUS", "5xx", { retryable: true }).retryable, true);
    assert.equal(new FredError("ERR_BACKEND_STATUS", "4xx").retryable, false);
    const err: unknown = new FredError("ERR_CHAIN_QUERY", "x");
    assert.ok(isFredError(err, "ERR_CHAIN_QUERY"));
    assert.ok(!isFredError(err, "ERR_CHAIN_TX"));
  });

  it("refuses an undocumented code at typecheck", () => {
    const build = () =>
      // @ts-expect-error ERR_TYPO is not in src/core/error-codes.ts
      new FredError("ERR_TYPO", "never built");
    assert.equal(typeof build, "function");
  });
});
