import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fitBanner, relativePaths } from "../../src/cli/up/command.ts";

describe("fred up's banner", () => {
  it("folds long lines to 80 columns; a folded command still pastes as one", () => {
    const command =
      "  fred lease connect <lease_uuid> --from tenant1 --home /tmp/x/devnet --rpc http://127.0.0.1:26657       # prints URLs";
    const folded = fitBanner([
      "short line stays",
      command,
      "mock backend   http://127.0.0.1:38033  (name mock, storage 3c51a3db-1b8f-4683-b396-f44244929599)",
    ]);
    for (const line of folded) assert.ok(line.length <= 80, line);
    assert.equal(folded[0], "short line stays");
    assert.ok(folded[1]?.endsWith(" \\"), "a broken command line ends in a shell continuation");
    const rejoined = folded
      .slice(1, 3)
      .map((l) => l.replace(/ \\$/, "").trim())
      .join(" ");
    assert.equal(rejoined, command.replace(/ +# .*$/, "").trim());
    assert.equal(folded[3]?.trim(), "# prints URLs");
    assert.match(folded[4] ?? "", /^mock backend {3}http/, "spacing inside a line is kept");
    assert.ok(!(folded[4] ?? "").endsWith("\\"), "a line that is not a command gets no continuation");
  });

  it("leaves a single word longer than the width whole", () => {
    const word = `/${"x".repeat(100)}`;
    assert.deepEqual(fitBanner([word]), [word]);
  });

  it("writes paths under the working directory relative to it, and no others", () => {
    assert.deepEqual(
      relativePaths(
        [
          "config /work/app/.fred/providerd/providerd.yaml",
          "  curl --cacert /work/app/.fred/tls/ca.pem https://x/",
          "/work/apple/x /etc/fred",
        ],
        "/work/app",
      ),
      [
        ".fred/providerd/providerd.yaml".replace(/^/, "config "),
        "  curl --cacert .fred/tls/ca.pem https://x/",
        "/work/apple/x /etc/fred",
      ],
    );
  });
});
