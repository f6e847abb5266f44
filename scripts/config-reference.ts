import { z } from "zod";
import {
  REFUSED_KEYS as DOCKER_REFUSED,
  fileSchema as dockerFileSchema,
  ENV_OVERRIDES,
} from "../src/backend/docker/config.ts";
import { envName, REFUSED_KEYS as PROVIDER_REFUSED } from "../src/provider/config/index.ts";
import { fileFields as providerFileSchema } from "../src/provider/config/schema.ts";

/**
 * docs/config-reference.md, generated from the configuration schemas themselves (the zod
 * schemas providerd and the Docker backend validate their files with), so it cannot drift:
 * test/docs/config-reference.test.ts renders it again and compares. Meanings live in the
 * hand-written pages each section links to; this page is the complete list of keys.
 *
 *   npm run docs:config     # rewrite docs/config-reference.md
 */
interface JsonNode {
  type?: string | string[];
  format?: string;
  anyOf?: JsonNode[];
  enum?: unknown[];
  default?: unknown;
  properties?: Record<string, JsonNode>;
  required?: string[];
  items?: JsonNode;
  additionalProperties?: JsonNode | boolean;
}

interface Row {
  key: string;
  type: string;
  default: string;
  env: string;
  note: string;
}

function typeOf(n: JsonNode): string {
  if (n.enum !== undefined) return n.enum.map((v) => `\`${String(v)}\``).join(" \\| ");
  const alts = n.anyOf?.filter((a) => a.type !== "null");
  if (alts !== undefined && alts.length > 0) return [...new Set(alts.map(typeOf))].join(" \\| ");
  const t = Array.isArray(n.type) ? n.type.filter((x) => x !== "null").join(" \\| ") : (n.type ?? "any");
  if (t === "array") return `list of ${n.items === undefined ? "any" : typeOf(n.items)}`;
  if (t === "object" && n.properties === undefined && typeof n.additionalProperties === "object")
    return `map of ${typeOf(n.additionalProperties)}`;
  return n.format === "duration" ? "duration" : t;
}

function isArray(n: JsonNode): boolean {
  return n.type === "array" || n.items !== undefined || (n.anyOf?.some(isArray) ?? false);
}

function objectOf(n: JsonNode): JsonNode | undefined {
  if (n.properties !== undefined) return n;
  if (n.items?.properties !== undefined) return n.items;
  return n.anyOf?.map(objectOf).find((x) => x !== undefined);
}

function rows(
  node: JsonNode,
  prefix: string,
  env: (key: string) => string,
  refused: Readonly<Record<string, string>>,
): Row[] {
  const out: Row[] = [];
  for (const [key, child] of Object.entries(node.properties ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    const name = `${prefix}${key}`;
    const nested = objectOf(child);
    const isList = isArray(child);
    const required = node.required?.includes(key) === true && !("default" in child);
    out.push({
      key: `\`${name}\``,
      type: nested === undefined ? typeOf(child) : isList ? "list of objects" : "object",
      default: "default" in child ? `\`${JSON.stringify(child.default)}\`` : required ? "required" : "—",
      env: prefix === "" && nested === undefined ? env(key) : "",
      note: refused[name] === undefined ? "" : `refused: ${refused[name]}`,
    });
    if (nested !== undefined) out.push(...rows(nested, `${name}${isList ? "[]" : ""}.`, () => "", refused));
  }
  return out;
}

function table(list: Row[]): string {
  const lines = ["| key | type | default | environment | note |", "|---|---|---|---|---|"];
  for (const r of list) lines.push(`| ${r.key} | ${r.type} | ${r.default} | ${r.env} | ${r.note} |`);
  return lines.join("\n");
}

const json = (schema: z.ZodType) =>
  z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonNode;

export function renderConfigReference(): string {
  const providerRefused = Object.fromEntries(Object.entries(PROVIDER_REFUSED).map(([k, v]) => [k, v.reason]));
  const dockerEnv = new Map(Object.entries(ENV_OVERRIDES).map(([envVar, key]) => [key as string, envVar]));
  const provider = rows(json(providerFileSchema), "", (k) => `\`${envName(k)}\``, providerRefused);
  const docker = rows(
    json(dockerFileSchema),
    "",
    (k) => (dockerEnv.has(k) ? `\`${dockerEnv.get(k)}\`` : ""),
    DOCKER_REFUSED,
  );
  return `# Configuration reference

Generated from the configuration schemas by \`npm run docs:config\`; do not edit by hand (a
test fails when this page and the schemas disagree). Every key either takes effect or is
refused at startup with its reason; unknown keys are refused. Durations are Go-style text
(\`30s\`, \`5m\`, \`1h30m\`). A default of — means the schema sets none: the key is optional
and the component's built-in behaviour applies (the linked page says which). What each key
does is explained on the linked pages.

## providerd (\`fred providerd -c providerd.yaml\`)

Meanings: [providerd-config.md](providerd-config.md). Every top-level key can also be set
as \`PROVIDER_<KEY>\` (lists comma-separated).

${table(provider)}

## Docker backend (\`fred backend docker -c docker-backend.yaml\`)

Meanings: [docker-backend.md](docker-backend.md); an annotated example is
[examples/docker-backend.yaml](../examples/docker-backend.yaml).

${table(docker)}
`;
}
