import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { isFredError } from "../../../src/core/errors.ts";
import { ensureOperatorToken } from "../../../src/provider/dashboard/index.ts";

/** operator_token_file: made once (0600, 64 hex), then read; refused when others may read it or it is empty. */
describe("operator token file", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-operator-token-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("creates a missing file 0600 with 32 random bytes in hex, then reads the same token", () => {
    const path = join(dir, "made");
    const first = ensureOperatorToken(path);
    assert.equal(first.created, true);
    assert.match(first.token, /^[0-9a-f]{64}$/);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(readFileSync(path, "utf8"), `${first.token}\n`);
    const again = ensureOperatorToken(path);
    assert.deepEqual(again, { token: first.token, path, created: false });
    assert.notEqual(ensureOperatorToken(join(dir, "other")).token, first.token);
  });

  const refused = (path: string, pattern: RegExp) =>
    assert.throws(
      () => ensureOperatorToken(path),
      (err: unknown) => isFredError(err) && err.code === "ERR_CONFIG" && pattern.test(err.message),
    );

  it("refuses a file group or others may read or write, naming the key and the mode", () => {
    for (const mode of [0o644, 0o640, 0o604, 0o620]) {
      const path = join(dir, `mode-${mode.toString(8)}`);
      writeFileSync(path, "a".repeat(64));
      chmodSync(path, mode);
      refused(
        path,
        new RegExp(`^operator_token_file ${path} has mode 0${mode.toString(8)}: it must not be readable`),
      );
    }
  });

  it("refuses an empty file, a short token and a directory", () => {
    const empty = join(dir, "empty");
    writeFileSync(empty, "\n", { mode: 0o600 });
    refused(empty, /^operator_token_file .* is empty/);
    const short = join(dir, "short");
    writeFileSync(short, "abc", { mode: 0o600 });
    refused(short, /must hold one token of at least 16 characters/);
    refused(dir, /^operator_token_file .* is not a regular file/);
  });

  it("refuses a file it cannot create, naming the key", () => {
    refused(join(dir, "missing-dir", "token"), /^operator_token_file .* cannot be created: ENOENT/);
  });
});
