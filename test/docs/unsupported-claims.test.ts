import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  REFUSED_KEYS as DOCKER_REFUSED,
  fileSchema as dockerFileSchema,
} from "../../src/backend/docker/config.ts";
import { openApiDocument } from "../../src/provider/api/openapi.ts";
import { REFUSED_KEYS as PROVIDER_REFUSED } from "../../src/provider/config/index.ts";
import { backendFields, fileFields as providerFileSchema } from "../../src/provider/config/schema.ts";

/**
 * Docs that describe last week: a sentence that calls a config key or a tenant route
 * unsupported, not built, not implemented or not served, while the code accepts that key
 * (it is in a schema and not on a refused list) or serves that route, fails here. The
 * refused keys themselves are listed in docs/config-reference.md, generated from the code
 * that refuses them (test/docs/config-reference.test.ts keeps it current).
 */
const ROOT = new URL("../../", import.meta.url).pathname;
const DOCS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const CLAIM =
  /\b(not supported|unsupported|not (yet )?(built|implemented|served|wired|available)|not built yet|isn't (built|supported)|no (support|ingress) yet|is missing|are missing|accepted (but|and) ignored)\b/i;

const effectiveKeys = new Set<string>([
  ...Object.keys(providerFileSchema.shape).filter((k) => PROVIDER_REFUSED[k] === undefined),
  ...Object.keys(backendFields.shape).map((k) => `backends[].${k}`),
  ...Object.keys(backendFields.shape),
  ...Object.keys(dockerFileSchema.shape).filter((k) => DOCKER_REFUSED[k] === undefined),
]);
/** Served tenant routes, path parameters written as `{}` so `{uuid}` and `{lease_uuid}` match. */
const routeKey = (path: string) => path.replace(/\{[^}]*\}/g, "{}").replace(/\/$/, "");
const servedRoutes = new Set(Object.keys(openApiDocument().paths as Record<string, unknown>).map(routeKey));

/**
 * Sentences of a markdown file with the names they mention: backticked tokens in prose,
 * and in a code block the key a line starts with (refusal messages are quoted there).
 */
function sentences(text: string): { line: number; text: string; names: string[] }[] {
  const out: { line: number; text: string; names: string[] }[] = [];
  let inCode = false;
  text.split("\n").forEach((line, i) => {
    if (line.trimStart().startsWith("```")) {
      inCode = !inCode;
      return;
    }
    if (inCode) {
      const key = /^\s*-?\s*([a-z_][a-z0-9_.[\]]*)\b/.exec(line)?.[1];
      out.push({ line: i + 1, text: line, names: key === undefined ? [] : [key] });
      return;
    }
    for (const part of line.split(/(?<=[.;])\s+|\s+\|\s+/)) {
      const names = [...part.matchAll(/`([^`]+)`/g)].map(([, t]) => nameOf(t as string));
      out.push({ line: i + 1, text: part, names });
    }
  });
  return out;
}

/** `GET /v1/x?y` → `/v1/x`; `key: value` or `key (from ENV)` → `key`. */
function nameOf(token: string): string {
  const t = token.replace(/^(GET|POST|PUT|DELETE|PATCH)\s+/, "");
  if (t.startsWith("/")) return t.split("?")[0] as string;
  return /^[A-Za-z_][\w.[\]]*/.exec(t)?.[0] ?? t;
}

function staleClaims(): string[] {
  const found: string[] = [];
  for (const file of DOCS) {
    for (const s of sentences(readFileSync(join(ROOT, file), "utf8"))) {
      if (!CLAIM.test(s.text)) continue;
      for (const name of s.names) {
        const asKey = effectiveKeys.has(name);
        const asRoute = name.startsWith("/") && servedRoutes.has(routeKey(name));
        if (asKey || asRoute)
          found.push(
            `${file}:${s.line}: \`${name}\` is ${asKey ? "an accepted key" : "a served route"}: ${s.text.trim()}`,
          );
      }
    }
  }
  return found;
}

describe("docs do not call served keys or routes unsupported", () => {
  it("knows what the code serves (so the check below can fail)", () => {
    assert.ok(effectiveKeys.has("maintenance_legacy_idempotency_tenants"));
    assert.ok(effectiveKeys.has("container_stop_timeout"));
    assert.ok(!effectiveKeys.has("grpc_endpoint"), "refused keys are not effective");
    assert.ok(servedRoutes.has(routeKey("/workloads")));
    assert.ok(servedRoutes.has(routeKey("/v1/leases/{x}/status")));
  });

  it("flags a sentence that calls a served key or route unsupported", () => {
    const probe = sentences(
      "The `tls_cert_file` key is not supported yet. `GET /workloads` is not implemented.",
    );
    const hits = probe.filter((s) => CLAIM.test(s.text));
    assert.equal(hits.length, 2);
  });

  it("no doc does", () => {
    assert.deepEqual(staleClaims(), []);
  });
});
