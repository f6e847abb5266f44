import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { isFredError } from "../../src/core/errors.ts";
import { armFailpoints } from "../../src/failpoints.ts";

describe("crash points (FRED_FAILPOINTS)", () => {
  it("arms known names from a comma-separated list; empty or unset arms none", () => {
    assert.deepEqual(armFailpoints(" provision.after-accepted ,provision.after-attempt-commit"), [
      "provision.after-accepted",
      "provision.after-attempt-commit",
    ]);
    assert.deepEqual(armFailpoints(""), []);
    assert.deepEqual(armFailpoints(undefined), []);
  });

  it("refuses an unknown name, naming the known ones", () => {
    assert.throws(
      () => armFailpoints("provision.after-attempt-commit,provision.typo"),
      (err: unknown) =>
        isFredError(err) &&
        err.code === "ERR_FAILPOINT" &&
        err.message.includes('"provision.typo"') &&
        err.message.includes("provision.after-accepted"),
    );
  });

  it("an armed point kills the process with SIGKILL, an unarmed one does nothing", () => {
    const script = (armed: string) =>
      `import { armFailpoints, failpoint } from "./src/failpoints.ts";
       armFailpoints(${JSON.stringify(armed)});
       failpoint("provision.after-attempt-commit");
       console.log("survived");`;
    const run = (armed: string) =>
      spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script(armed)], {
        encoding: "utf8",
      });
    const killed = run("provision.after-attempt-commit");
    assert.equal(killed.signal, "SIGKILL");
    assert.equal(killed.stdout, "");
    const alive = run("provision.after-accepted");
    assert.equal(alive.status, 0, alive.stderr);
    assert.equal(alive.stdout.trim(), "survived");
  });
});
