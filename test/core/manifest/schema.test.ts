import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { manifestJsonSchema, manifestJsonSchemaText } from "../../../src/core/manifest/json-schema.ts";
import { MANIFEST_LIMITS } from "../../../src/core/manifest/limits.ts";

const committedPath = new URL("../../../schemas/manifest.schema.json", import.meta.url);

describe("published JSON Schema", () => {
  it("the committed file is exactly what the generator produces now (run `npm run schema`)", () => {
    assert.equal(readFileSync(committedPath, "utf8"), manifestJsonSchemaText());
  });

  it("is draft 2020-12 with both shapes and the limits of the zod schema", () => {
    const schema = manifestJsonSchema() as {
      $schema: string;
      anyOf: { additionalProperties: unknown; required: string[] }[];
      $defs: {
        Service: {
          additionalProperties: boolean;
          required: string[];
          properties: Record<string, Record<string, unknown>>;
        };
      };
    };
    assert.equal(schema.$schema, "https://json-schema.org/draft/2020-12/schema");
    assert.equal(schema.anyOf.length, 2);
    assert.ok(schema.anyOf.every((shape) => shape.additionalProperties === false));
    const service = schema.$defs.Service;
    assert.equal(service.additionalProperties, false);
    assert.deepEqual(service.required, ["image"]);
    assert.equal(service.properties["ports"]?.["maxProperties"], MANIFEST_LIMITS.maxPorts);
    assert.equal(service.properties["env"]?.["maxProperties"], MANIFEST_LIMITS.maxEnv);
    assert.equal(service.properties["labels"]?.["maxProperties"], MANIFEST_LIMITS.maxLabels);
    assert.equal(service.properties["tmpfs"]?.["maxItems"], MANIFEST_LIMITS.maxTmpfs);
    assert.equal(service.properties["expose"]?.["maxItems"], MANIFEST_LIMITS.maxExpose);
    assert.equal(service.properties["volumes"], undefined);
  });

  it("spells case-insensitive patterns out (JSON Schema has no regex flags)", () => {
    const text = manifestJsonSchemaText();
    assert.ok(text.includes("[pP][aA][tT][hH]"));
    assert.ok(text.includes("[tT][cC][pP]"));
  });
});
