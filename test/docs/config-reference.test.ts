import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { renderConfigReference } from "../../scripts/config-reference.ts";
import { REPO_ROOT } from "../support/index.ts";

/**
 * docs/config-reference.md is generated from the configuration schemas: it must be what the
 * generator writes today (run `npm run docs:config` after changing a schema), and every key
 * it lists must be explained somewhere a reader is sent to.
 */
const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");

function keysOf(section: string): string[] {
  return [...section.matchAll(/^\| `([a-z0-9_[\].]+)`/gm)].map((m) => m[1] as string);
}

describe("docs/config-reference.md", () => {
  const page = read("docs/config-reference.md");

  it("is exactly what the generator renders from the schemas (run npm run docs:config)", () => {
    assert.equal(page, renderConfigReference());
  });

  it("lists both components' keys, nested ones included", () => {
    const [providerd, docker] = page.split("## Docker backend") as [string, string];
    assert.ok(keysOf(providerd).includes("backends[].url"));
    assert.ok(keysOf(providerd).includes("placement_store_db_path"));
    assert.ok(keysOf(docker).includes("volume_data_path"));
    assert.ok(keysOf(docker).length > 30);
  });

  it("every key is explained on the page its section links to", () => {
    const [providerd, docker] = page.split("## Docker backend") as [string, string];
    const explained: [string[], string][] = [
      [keysOf(providerd), read("docs/providerd-config.md")],
      [
        keysOf(docker),
        read("docs/docker-backend.md") + read("docs/ingress.md") + read("examples/docker-backend.yaml"),
      ],
    ];
    const missing = explained.flatMap(([keys, text]) =>
      keys.filter((k) => !text.includes((k.split(".").at(-1) as string).replace("[]", ""))),
    );
    assert.deepEqual(missing, []);
  });
});
