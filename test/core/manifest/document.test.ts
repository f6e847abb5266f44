import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { formatManifest, MANIFEST_LIMITS, parseManifest } from "../../../src/core/manifest/index.ts";
import { expectProblem, expectValid, flat, problemsOf } from "./helpers.ts";

describe("document level", () => {
  it("refuses an empty payload", () => {
    assert.deepEqual(problemsOf(""), [{ path: "", message: "manifest is empty" }]);
    assert.deepEqual(problemsOf(new Uint8Array(0)), [{ path: "", message: "manifest is empty" }]);
  });

  it("refuses whitespace and broken JSON", () => {
    expectProblem("   ", "", /invalid JSON/);
    expectProblem('{"image": "nginx"', "", /invalid JSON/);
  });

  for (const text of ["[]", '"nginx"', "42", "null", "true", '[{"image":"nginx"}]']) {
    it(`refuses non-object JSON ${text}`, () => {
      assert.deepEqual(problemsOf(text), [{ path: "", message: "manifest must be a JSON object" }]);
    });
  }

  it("refuses trailing garbage after the object", () => {
    expectValid('{"image":"nginx"}\n');
    expectProblem('{"image":"nginx"} {"image":"redis"}', "", /invalid JSON/);
    expectProblem('{"image":"nginx"}x', "", /invalid JSON/);
  });

  it("refuses duplicate keys at any level (Go would keep the last silently)", () => {
    expectValid('{"image":"nginx","env":{"A":"1","B":"1"}}');
    expectProblem('{"image":"nginx","image":"redis"}', "", /duplicate key "image"/);
    expectProblem('{"image":"nginx","env":{"A":"1","A":"2"}}', "", /duplicate key "A"/);
    expectProblem('{"services":{"web":{"image":"a"},"web":{"image":"b"}}}', "", /duplicate key "web"/);
  });

  it("refuses oversized input before parsing it", () => {
    // Not valid JSON either: the size message proves the parser never looked at it.
    const huge = `{${" ".repeat(MANIFEST_LIMITS.maxBytes)}`;
    assert.deepEqual(problemsOf(huge), [
      { path: "", message: `manifest is larger than ${MANIFEST_LIMITS.maxBytes} bytes` },
    ]);
    assert.deepEqual(problemsOf(Buffer.from(huge)), [
      { path: "", message: `manifest is larger than ${MANIFEST_LIMITS.maxBytes} bytes` },
    ]);
  });

  it("takes a configurable size cap, inclusive", () => {
    const text = JSON.stringify(flat({}));
    expectValid(text, { maxBytes: Buffer.byteLength(text) });
    expectProblem(text, "", /larger than/, { maxBytes: Buffer.byteLength(text) - 1 });
  });

  it("parses bytes and text alike", () => {
    const text = JSON.stringify({ services: { web: flat({ env: { GREETING: "héllo" } }) } });
    const fromText = parseManifest(text);
    const fromBytes = parseManifest(new TextEncoder().encode(text));
    assert.ok(fromText.ok && fromBytes.ok);
    assert.deepEqual(fromBytes.manifest, fromText.manifest);
  });

  it('refuses a "__proto__" key anywhere', () => {
    expectProblem('{"image":"nginx","env":{"__proto__":"x"}}', "/env/__proto__", /__proto__/);
    expectProblem(
      '{"services":{"web":{"image":"a","depends_on":{"__proto__":{}}}}}',
      "/services/web/depends_on/__proto__",
      /__proto__/,
    );
  });

  it("rejects unknown keys at every level, each at its own pointer", () => {
    const problems = problemsOf({
      services: {
        web: {
          image: "nginx",
          extra: 1,
          ports: { "80/tcp": { extra: 2 } },
          health_check: { test: ["NONE"], extra: 3 },
          depends_on: { db: { condition: "service_started", extra: 4 } },
        },
        db: { image: "postgres" },
      },
      extra: 5,
    });
    assert.deepEqual(problems.map((p) => p.path).sort(), [
      "/extra",
      "/services/web/depends_on/db/extra",
      "/services/web/extra",
      "/services/web/health_check/extra",
      "/services/web/ports/80~1tcp/extra",
    ]);
    assert.ok(problems.every((p) => p.message === 'unknown field "extra"'));
  });

  it("escapes pointers per RFC 6901 (~ → ~0, / → ~1)", () => {
    expectProblem(flat({ env: { "a/~=b": "x" } }), "/env/a~1~0=b", /'='/);
    expectProblem(flat({ labels: { "fred.x/y~z": "1" } }), "/labels/fred.x~1y~0z", /reserved/);
  });

  it("caps the problem list and says how many were left out", () => {
    const labels = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`fred.l${i}`, "x"]));
    const problems = problemsOf(flat({ labels }));
    assert.equal(problems.length, MANIFEST_LIMITS.maxProblems + 1);
    assert.deepEqual(problems.at(-1), { path: "", message: "20 more problems not listed" });
    assert.equal(problemsOf(flat({ labels }), { maxProblems: 5 }).length, 6);
  });

  it("accepts fixed host ports only when asked to (reading stored documents)", () => {
    const doc = flat({ ports: { "80/tcp": { host_port: 8080 } } });
    expectProblem(doc, "/ports/80~1tcp/host_port", /not permitted/);
    const manifest = expectValid(doc, { allowFixedHostPort: true });
    assert.equal(manifest.services["app"]?.ports?.["80/tcp"]?.host_port, 8080);
  });
});

describe("typed internal form", () => {
  it('wraps a flat manifest as the single service "app"', () => {
    const manifest = expectValid(flat({ env: { A: "1" }, depends_on: {} }));
    assert.deepEqual(manifest, {
      format: "flat",
      services: { app: { image: "nginx:1.27", env: { A: "1" } } },
    });
  });

  it("turns durations into nanoseconds and drops zero health timings", () => {
    const manifest = expectValid({
      services: {
        web: flat({
          stop_grace_period: "1m30s",
          health_check: {
            test: ["CMD", "true"],
            interval: "500ms",
            timeout: 2_000_000_000,
            start_period: "0",
            retries: 3,
          },
        }),
      },
    });
    assert.deepEqual(manifest.services["web"], {
      image: "nginx:1.27",
      stop_grace_period: 90e9,
      health_check: { test: ["CMD", "true"], interval: 500e6, timeout: 2e9, retries: 3 },
    });
  });

  it("formats back to a stack document with Go duration strings that parses to the same thing", () => {
    const manifest = expectValid(
      flat({
        stop_grace_period: 45_000_000_000,
        health_check: { test: ["CMD-SHELL", "true"], interval: "1.5s" },
      }),
    );
    const document = formatManifest(manifest);
    assert.deepEqual(document, {
      services: {
        app: {
          image: "nginx:1.27",
          stop_grace_period: "45s",
          health_check: { test: ["CMD-SHELL", "true"], interval: "1.5s" },
        },
      },
    });
    const again = expectValid(document);
    assert.deepEqual(again.services, manifest.services);
    assert.equal(again.format, "stack");
  });
});

describe("tenant guide examples", () => {
  it("every JSON example in docs/manifest.md is a valid manifest", () => {
    const guide = readFileSync(new URL("../../../docs/manifest.md", import.meta.url), "utf8");
    const examples = [...guide.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    assert.ok(examples.length >= 2);
    for (const example of examples) expectValid(example);
  });
});
