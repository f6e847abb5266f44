import { Ajv2020 } from "ajv/dist/2020.js";

/**
 * Holds real answers to the OpenAPI document providerd serves: the status must be one the
 * document lists for the route, and a JSON body must validate (ajv, JSON Schema 2020-12)
 * against that response's schema, `$ref`s into components included. `problems` returns
 * what is wrong (empty: the answer conforms), so a test can also show that it fails.
 */
const BASE = "https://fred.invalid/openapi.json";

type Doc = { paths: Record<string, Record<string, { responses: Record<string, Response> }>> };
type Response = { content?: Record<string, { schema?: unknown }> };

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

export class OpenApiCheck {
  readonly #doc: Doc;
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true });
  /** Every (route, method, status) checked so far, to tell which documented answers were seen. */
  readonly seen = new Set<string>();

  constructor(doc: unknown) {
    this.#doc = doc as Doc;
    this.#ajv.addSchema({ ...(doc as object), $id: BASE });
  }

  /** Problems of `body` (a parsed JSON value, or undefined for none) as the answer to `route`. */
  problems(route: string, method: string, status: number, body: unknown, contentType = ""): string[] {
    const responses = this.#doc.paths[route]?.[method]?.responses;
    if (responses === undefined) return [`${method.toUpperCase()} ${route} is not in the document`];
    const response = responses[String(status)];
    if (response === undefined) return [`${method.toUpperCase()} ${route}: ${status} is not documented`];
    this.seen.add(`${method} ${route} ${status}`);
    const media = Object.keys(response.content ?? {});
    if (media.length === 0) return body === undefined ? [] : [`${status} should have no body`];
    const type = media.find((m) => contentType.startsWith(m));
    if (type === undefined) return [`${status}: content-type ${contentType} is not one of ${media}`];
    if (type !== "application/json") return [];
    const at = `#/${pointer("paths", route, method, "responses", String(status), "content", type, "schema")}`;
    const validate = this.#ajv.getSchema(`${BASE}${at}`);
    if (validate === undefined) return [`no schema at ${at}`];
    if (validate(body)) return [];
    return (validate.errors ?? []).map((e) => `${status} body ${e.instancePath || "/"} ${e.message}`);
  }

  /** Problems of `value` as an instance of the component schema `name`. */
  componentProblems(name: string, value: unknown): string[] {
    const validate = this.#ajv.getSchema(`${BASE}#/components/schemas/${name}`);
    if (validate === undefined) return [`no component ${name}`];
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${name} ${e.instancePath || "/"} ${e.message}`);
  }

  /** Fetches `path` and asserts nothing is wrong with the answer; returns it. */
  async fetch(
    base: string,
    route: string,
    path: string,
    init: RequestInit & { method?: string } = {},
  ): Promise<{ status: number; body: unknown; headers: Headers }> {
    const res = await fetch(`${base}${path}`, init);
    const text = await res.text();
    const type = res.headers.get("content-type") ?? "";
    const body = text === "" ? undefined : type.startsWith("application/json") ? JSON.parse(text) : text;
    const found = this.problems(route, (init.method ?? "GET").toLowerCase(), res.status, body, type);
    if (found.length > 0) throw new Error(`${path}: ${found.join("; ")}\n${text.slice(0, 2000)}`);
    return { status: res.status, body, headers: res.headers };
  }
}
