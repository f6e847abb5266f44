import fc from "fast-check";
import { mintTenantToken } from "../../../src/auth/token.ts";
import type { Leases } from "./fuzz-target.ts";
import { MANIFEST, MANIFEST_HASH } from "./fuzz-target.ts";
import { highS, type TenantKey, tampered } from "./tenant-client.ts";

/**
 * The fuzz's inputs, as descriptions rather than bytes: a token is minted only when its
 * case runs (tokens carry the current time), so a case stays valid however long the run
 * takes and shrinks to something readable.
 */
export type KeyName = "owner" | "other" | "stranger";

export interface Signed {
  t: "signed";
  key: KeyName;
  lease: string;
  /** Seconds added to now: -20..5 verifies, below -30 is expired, above 10 is from the future. */
  offset: number;
  /** Payload tokens bind a meta_hash (hex, as signed). */
  meta?: string;
}

export type TokenSpec =
  | { t: "none" }
  | Signed
  | { t: "tampered"; base: Signed; field: string; value: unknown }
  | { t: "highS"; base: Signed }
  | { t: "text"; text: string }
  | { t: "base64"; bytes: Uint8Array }
  | { t: "json"; value: unknown }
  | { t: "huge"; chars: number };

export interface Auth {
  token: TokenSpec;
  /** How the Authorization header frames it; undefined: no header at all. */
  scheme: string | undefined;
}

export interface RequestCase {
  method: string;
  path: string;
  query: [string, string][];
  headers: Record<string, string>;
  auth: Auth;
  body: Uint8Array | undefined;
}

/** Printable ASCII only: what an HTTP client library will put on the wire as a header value. */
export const printable = (maxLength = 40) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });

const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "FOO"];

export function fuzzArbitraries(leases: Leases) {
  const known = fc.constantFrom(leases.active, leases.pending, leases.billing);
  const uuid = fc.oneof({ weight: 3, arbitrary: known }, { weight: 2, arbitrary: fc.uuid({ version: 4 }) });
  const malformedUuid = fc.oneof(
    known.map((u) => u.toUpperCase()),
    known.map((u) => u.replace(/-/g, "")),
    known.map((u) => `${u}0`),
    known.map((u) => u.slice(1)),
    fc.uuid({ version: 1 }),
    fc.constantFrom("", "..", ".", "%00", "null", "00000000-0000-0000-0000-000000000000", "*"),
    printable(60),
    fc.string({ unit: "binary", maxLength: 30 }),
    fc.integer({ min: 200, max: 3000 }).map((n) => "a".repeat(n)),
  );
  const pathLease = fc.oneof({ weight: 5, arbitrary: uuid }, { weight: 2, arbitrary: malformedUuid });

  const offset = fc.oneof(
    { weight: 5, arbitrary: fc.integer({ min: -20, max: 5 }) },
    { weight: 2, arbitrary: fc.integer({ min: 31, max: 10_000_000 }).map((n) => -n) },
    { weight: 2, arbitrary: fc.integer({ min: 12, max: 10_000_000 }) },
  );
  const meta = fc.oneof(
    fc.constant(MANIFEST_HASH),
    fc.constant(MANIFEST_HASH.toUpperCase()),
    fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("hex")),
  );
  const signed = (lease: fc.Arbitrary<string>): fc.Arbitrary<Signed> =>
    fc.record(
      {
        t: fc.constant("signed" as const),
        key: fc.constantFrom<KeyName>("owner", "owner", "other", "stranger"),
        lease,
        offset,
        meta,
      },
      { requiredKeys: ["t", "key", "lease", "offset"] },
    );
  const envelopeField = fc.constantFrom(
    "tenant",
    "lease_uuid",
    "timestamp",
    "pub_key",
    "signature",
    "meta_hash",
  );
  /** The owner's fresh token for `lease`: the one that opens the route, so handlers run too. */
  const good = (lease: fc.Arbitrary<string>, kind: "access" | "payload"): fc.Arbitrary<Signed> =>
    fc.record({
      t: fc.constant("signed" as const),
      key: fc.constant<KeyName>("owner"),
      lease,
      offset: fc.integer({ min: -20, max: 5 }),
      ...(kind === "payload" ? { meta: fc.constantFrom(MANIFEST_HASH, MANIFEST_HASH.toUpperCase()) } : {}),
    });
  const token = (
    lease: fc.Arbitrary<string>,
    kind: "access" | "payload" = "access",
  ): fc.Arbitrary<TokenSpec> =>
    fc.oneof(
      { weight: 12, arbitrary: good(lease, kind) },
      { weight: 1, arbitrary: fc.constant({ t: "none" as const }) },
      { weight: 8, arbitrary: signed(lease) },
      {
        weight: 3,
        arbitrary: fc.record({
          t: fc.constant("tampered" as const),
          base: signed(lease),
          field: envelopeField,
          value: fc.oneof(fc.jsonValue(), printable(80), fc.constant(null)),
        }),
      },
      { weight: 1, arbitrary: fc.record({ t: fc.constant("highS" as const), base: signed(lease) }) },
      { weight: 1, arbitrary: fc.record({ t: fc.constant("text" as const), text: printable(200) }) },
      {
        weight: 1,
        arbitrary: fc.record({ t: fc.constant("base64" as const), bytes: fc.uint8Array({ maxLength: 600 }) }),
      },
      { weight: 1, arbitrary: fc.record({ t: fc.constant("json" as const), value: fc.jsonValue() }) },
      {
        weight: 1,
        arbitrary: fc.record({
          t: fc.constant("huge" as const),
          chars: fc.oneof(fc.integer({ min: 4000, max: 15_000 }), fc.integer({ min: 17_000, max: 40_000 })),
        }),
      },
    );
  const scheme = fc.oneof(
    { weight: 12, arbitrary: fc.constant("Bearer ") },
    {
      weight: 1,
      arbitrary: fc.constantFrom("bearer ", "BEARER ", "Bearer  ", "Bearer\t", "Basic ", "", "Bearer"),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
  const auth = (lease: fc.Arbitrary<string>, kind: "access" | "payload" = "access"): fc.Arbitrary<Auth> =>
    fc.record({ token: token(lease, kind), scheme });

  const headerName = fc
    .stringMatching(/^[a-z][a-z0-9-]{0,24}$/)
    .filter((n) => !["content-length", "transfer-encoding", "host", "connection", "upgrade"].includes(n));
  const headers = fc.record(
    {
      "content-type": fc.oneof(
        fc.constantFrom(
          "application/json",
          "application/octet-stream",
          "text/plain",
          "application/x-www-form-urlencoded",
          "multipart/form-data; boundary=x",
          "application/json; charset=utf-16",
        ),
        printable(50),
      ),
      origin: fc.oneof(fc.constant("https://app.example"), fc.webUrl(), printable(40)),
      "x-forwarded-for": fc.oneof(
        fc.ipV4(),
        fc.array(fc.ipV4(), { maxLength: 5 }).map((a) => a.join(", ")),
        printable(40),
      ),
      "access-control-request-method": fc.constantFrom(...METHODS),
      "idempotency-key": fc.oneof(fc.uuid({ version: 4 }), printable(60)),
      accept: fc.constantFrom("*/*", "application/json", "text/html", "text/event-stream"),
      "accept-encoding": fc.constantFrom("gzip", "br", "deflate", "identity", "*"),
      cookie: printable(60),
      range: fc.constantFrom("bytes=0-10", "bytes=-1", "garbage"),
      "x-fred-signature": printable(120),
    },
    { requiredKeys: [] },
  );
  const extraHeaders = fc.dictionary(headerName, printable(60), { maxKeys: 4 });
  const allHeaders = fc.tuple(headers, extraHeaders).map(([a, b]) => ({ ...b, ...a }));

  const queryKey = fc.oneof(
    fc.constantFrom(
      "tail",
      "token",
      "since",
      "notices",
      "lease_uuid",
      "operation_id",
      "lifecycle_id",
      "limit",
    ),
    fc.stringMatching(/^[a-z_]{1,12}$/),
  );
  const queryValue = fc.oneof(
    fc.integer({ min: -5, max: 20_000 }).map(String),
    fc.constantFrom("", "0", "1", "100", "10000", "10001", "true", "false", "1e3", "0x10", "9".repeat(30)),
    fc.uuid({ version: 4 }),
    printable(80),
  );
  const query = fc.array(fc.tuple(queryKey, queryValue), { maxLength: 4 });

  const body = fc.oneof(
    { weight: 6, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 2048 }) },
    { weight: 1, arbitrary: fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? "null")) },
    { weight: 1, arbitrary: fc.constant(new Uint8Array(0)) },
  );
  const uploadBody = fc.oneof(
    { weight: 3, arbitrary: fc.constant(new Uint8Array(MANIFEST)) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((b) => Buffer.concat([MANIFEST, b])) },
    { weight: 3, arbitrary: fc.uint8Array({ maxLength: 4096 }) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.integer({ min: 1_048_577, max: 1_100_000 }).map((n) => new Uint8Array(n)) },
  );
  /** `POST restore` bodies: mostly the documented shape, naming real and random leases. */
  const restoreBody = fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .oneof(pathLease, uuid, printable(40))
        .map((from) => Buffer.from(JSON.stringify({ from_lease_uuid: from }))),
    },
    { weight: 3, arbitrary: body },
  );
  const method = (main: string) =>
    fc.oneof(
      { weight: 8, arbitrary: fc.constant(main) },
      { weight: 2, arbitrary: fc.constantFrom(...METHODS) },
    );

  /** A request to `/v1/leases/{lease}/{route}`; the token names the path's lease most of the time. */
  const leaseRoute = (
    route: string,
    main = "GET",
    bodies = body,
    kind: "access" | "payload" = main === "POST" ? "payload" : "access",
  ): fc.Arbitrary<RequestCase> =>
    pathLease.chain((lease) =>
      fc.record({
        method: method(main),
        path: fc.constant(`/v1/leases/${encodeURIComponent(lease)}/${route}`),
        query,
        headers: allHeaders,
        auth: auth(
          fc.oneof({ weight: 6, arbitrary: fc.constant(lease) }, { weight: 3, arbitrary: uuid }),
          kind,
        ),
        body: bodies,
      }),
    );

  /** A request to a fixed path (operational routes, /v1/provider). */
  const fixedRoute = (path: string, main = "GET"): fc.Arbitrary<RequestCase> =>
    fc.record({
      method: method(main),
      path: fc.constant(path),
      query,
      headers: allHeaders,
      auth: fc.oneof(
        { weight: 3, arbitrary: fc.constant({ token: { t: "none" as const }, scheme: undefined }) },
        { weight: 1, arbitrary: auth(uuid) },
      ),
      body,
    });

  const segment = fc.oneof(
    fc.constantFrom(
      "v1",
      "leases",
      "v2",
      "health",
      "callbacks",
      "provision",
      "events",
      "data",
      "..",
      "%2e%2e",
    ),
    uuid,
    fc.stringMatching(/^[A-Za-z0-9._~-]{0,20}$/),
    printable(20).map(encodeURIComponent),
  );
  /** Anything under the listener: nested prefixes of real routes, traversal, junk. */
  const randomPath: fc.Arbitrary<RequestCase> = fc.record({
    method: fc.constantFrom(...METHODS),
    path: fc.array(segment, { minLength: 0, maxLength: 7 }).map((s) => `/${s.join("/")}`),
    query,
    headers: allHeaders,
    auth: auth(uuid),
    body,
  });

  return {
    pathLease,
    uuid,
    token,
    auth,
    allHeaders,
    query,
    leaseRoute,
    fixedRoute,
    randomPath,
    uploadBody,
    restoreBody,
  };
}

/** Mints (and caches for the current second) the token a spec describes. */
export class TokenMint {
  readonly #cache = new Map<string, string>();
  #second = 0;

  constructor(readonly keys: Record<KeyName, TenantKey>) {}

  signed(s: Signed, nowSeconds: number): string {
    if (nowSeconds !== this.#second) {
      this.#cache.clear();
      this.#second = nowSeconds;
    }
    const timestamp = nowSeconds + s.offset;
    const id = `${s.key}|${s.lease}|${timestamp}|${s.meta ?? ""}`;
    let token = this.#cache.get(id);
    if (token === undefined) {
      token = mintTenantToken({
        privateKey: this.keys[s.key].privateKey,
        leaseUuid: s.lease,
        timestamp,
        ...(s.meta === undefined ? {} : { metaHash: s.meta }),
      });
      this.#cache.set(id, token);
    }
    return token;
  }

  token(spec: TokenSpec, nowSeconds: number): string | undefined {
    switch (spec.t) {
      case "none":
        return undefined;
      case "signed":
        return this.signed(spec, nowSeconds);
      case "tampered":
        return tampered(this.signed(spec.base, nowSeconds), spec.field, spec.value);
      case "highS":
        return highS(this.signed(spec.base, nowSeconds));
      case "text":
        return spec.text;
      case "base64":
        return Buffer.from(spec.bytes).toString("base64");
      case "json":
        return Buffer.from(JSON.stringify(spec.value) ?? "").toString("base64");
      case "huge":
        return "A".repeat(spec.chars);
    }
  }

  /** The Authorization header value, or undefined for none. */
  header(auth: Auth, nowSeconds: number): string | undefined {
    const token = this.token(auth.token, nowSeconds);
    if (token === undefined || auth.scheme === undefined) return undefined;
    return `${auth.scheme}${token}`;
  }
}

/** A callback nobody signed correctly: every signature is missing, wrong, stale or for other bytes. */
export interface CallbackCase {
  query: string;
  body: Uint8Array;
  signature:
    | { t: "none" }
    | { t: "text"; text: string }
    | { t: "wrong-secret"; secret: string }
    | { t: "other-bytes"; backend: number; uri: string | undefined; body: Uint8Array | undefined }
    | { t: "stale"; backend: number; offsetSeconds: number }
    | { t: "other-backend" };
  headers: Record<string, string>;
}

export function callbackArbitrary(leases: Leases, storageIds: readonly string[]): fc.Arbitrary<CallbackCase> {
  const a = fuzzArbitraries(leases);
  const query = fc.oneof(
    { weight: 6, arbitrary: fc.uuid({ version: 4 }).map((u) => `operation_id=${u}`) },
    fc.uuid({ version: 4 }).map((u) => `lifecycle_id=${u}`),
    fc
      .tuple(fc.uuid({ version: 4 }), fc.uuid({ version: 4 }))
      .map(([x, y]) => `operation_id=${x}&lifecycle_id=${y}`),
    fc
      .tuple(fc.uuid({ version: 4 }), fc.uuid({ version: 4 }))
      .map(([x, y]) => `operation_id=${x}&operation_id=${y}`),
    a.query.map((q) => new URLSearchParams(q).toString()),
  );
  const complete = fc
    .record({
      lease_uuid: fc.oneof(fc.constant(leases.active), fc.uuid({ version: 4 })),
      status: fc.constantFrom("success", "failed"),
      error: fc.constantFrom("", "boom"),
      backend_storage_id: fc.oneof(fc.constantFrom(...storageIds), fc.uuid({ version: 4 })),
    })
    .map((o) => Buffer.from(JSON.stringify(o)));
  const shaped = fc
    .record(
      {
        lease_uuid: fc.oneof(a.uuid, printable(40)),
        status: fc.oneof(fc.constantFrom("success", "failed", "ready", "deprovisioned", ""), printable(20)),
        error: fc.oneof(fc.constant(""), printable(100)),
        backend_storage_id: fc.oneof(fc.constantFrom(...storageIds), fc.uuid({ version: 4 })),
        backend: fc.constantFrom("mock-1", "mock-2", "other"),
        extra: fc.jsonValue(),
      },
      { requiredKeys: [] },
    )
    .map((o) => Buffer.from(JSON.stringify(o)));
  const body = fc.oneof(
    { weight: 6, arbitrary: complete },
    { weight: 2, arbitrary: shaped },
    { weight: 1, arbitrary: fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? "")) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 1024 }) },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 65_537, max: 70_000 }).map((n) => new Uint8Array(n).fill(0x20)),
    },
  );
  const backend = fc.integer({ min: 0, max: storageIds.length - 1 });
  const signature = fc.oneof(
    fc.constant({ t: "none" as const }),
    fc.record({ t: fc.constant("text" as const), text: printable(160) }),
    fc.record({ t: fc.constant("wrong-secret" as const), secret: fc.stringMatching(/^[a-z0-9]{32,48}$/) }),
    fc.record({
      t: fc.constant("other-bytes" as const),
      backend,
      uri: fc.option(
        fc.uuid({ version: 4 }).map((u) => `/callbacks/provision?operation_id=${u}`),
        {
          nil: undefined,
        },
      ),
      body: fc.option(fc.uint8Array({ minLength: 1, maxLength: 64 }), { nil: undefined }),
    }),
    fc.record({
      t: fc.constant("stale" as const),
      backend,
      offsetSeconds: fc.oneof(
        fc.integer({ min: -10_000_000, max: -400 }),
        fc.integer({ min: 120, max: 10_000_000 }),
      ),
    }),
    fc.constant({ t: "other-backend" as const }),
  );
  // Mostly without a content type of its own, so the case reaches the signature check.
  const headers = fc.oneof(
    { weight: 3, arbitrary: a.allHeaders.map(({ "content-type": _, ...rest }) => rest) },
    { weight: 1, arbitrary: a.allHeaders },
  );
  return fc.record({ query, body, signature, headers });
}

/** Bytes no HTTP client would send: broken request lines, header syntax, huge heads, bare LF. */
export interface RawCase {
  line: string;
  headers: [string, string][];
  eol: string;
  hugeHeader: number | undefined;
}

export function rawArbitrary(): fc.Arbitrary<RawCase> {
  const noEol = (s: string) => s.replace(/[\r\n]/g, " ");
  const binary = (n: number) => fc.string({ unit: "binary", maxLength: n }).map(noEol);
  const method = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom("GET", "POST", "HEAD", "OPTIONS") },
    { weight: 1, arbitrary: fc.constantFrom(...METHODS, "CONNECT", "get", "G ET", "") },
    { weight: 1, arbitrary: printable(12) },
    { weight: 1, arbitrary: binary(8) },
  );
  const target = fc.oneof(
    { weight: 3, arbitrary: fc.uuid({ version: 4 }).map((u) => `/v1/leases/${u}/events`) },
    fc.constantFrom("/health", "/readyz", "/metrics", "/v1/leases", "*", "http://127.0.0.1/health", "//", ""),
    fc.uuid({ version: 4 }).map((u) => `/v1/leases/${u}/status`),
    printable(120).map((s) => `/${s}`),
    binary(60),
  );
  const version = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom("HTTP/1.1", "HTTP/1.0") },
    { weight: 1, arbitrary: fc.constantFrom("HTTP/2.0", "HTTP/9.9", "HTTP/1.1 x", "", "http/1.1") },
  );
  const line = fc.tuple(method, target, version).map(([m, t, v]) => `${m} ${t} ${v}`.trimEnd());
  const headerName = fc.oneof(
    { weight: 6, arbitrary: fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/) },
    fc.constantFrom(
      "Authorization",
      "Content-Type",
      "Origin",
      "X-Forwarded-For",
      "Expect",
      " Leading",
      "Bad Name",
      "",
    ),
    binary(16),
  );
  const value = fc.oneof({ weight: 4, arbitrary: printable(120) }, { weight: 1, arbitrary: binary(60) });
  const headers = fc
    .array(fc.tuple(headerName, value), { maxLength: 6 })
    .map((hs) =>
      hs.filter(([n]) => !/^\s*(content-length|transfer-encoding|connection|upgrade|host)\s*$/i.test(n)),
    );
  return fc.record({
    line,
    headers,
    eol: fc.constantFrom("\r\n", "\r\n", "\n"),
    hugeHeader: fc.option(fc.integer({ min: 17_000, max: 70_000 }), { nil: undefined, freq: 8 }),
  });
}

export function rawBytes(c: RawCase): Buffer {
  const lines = [c.line, ...c.headers.map(([n, v]) => `${n}: ${v}`)];
  if (c.hugeHeader !== undefined) lines.push(`X-Huge: ${"h".repeat(c.hugeHeader)}`);
  lines.push("Host: 127.0.0.1", "Connection: close", "", "");
  return Buffer.from(lines.join(c.eol), "latin1");
}
