import assert from "node:assert/strict";
import { after, before, describe, it, type TestContext } from "node:test";
import fc from "fast-check";
import { hmacSecret, SIGNATURE_HEADER, signRequest } from "../../../src/auth/hmac.ts";
import { type TokenClaims, verifyTenantToken } from "../../../src/auth/token.ts";
import { bearerToken } from "../../../src/provider/api/auth.ts";
import { SECRETS, SIDS } from "../e2e/stack.ts";
import {
  type CallbackCase,
  callbackArbitrary,
  fuzzArbitraries,
  type RequestCase,
  rawArbitrary,
  rawBytes,
  TokenMint,
} from "./fuzz-arbitraries.ts";
import { FuzzTarget, MANIFEST, type Observed } from "./fuzz-target.ts";
import { answerProblem, type Reply, Wire } from "./fuzz-wire.ts";

/**
 * Property-based fuzz of every route of providerd's listener, over real HTTP against a
 * real providerd (devnet and mock backends as processes, see fuzz-target.ts). For each
 * route, FUZZ_RUNS cases (default 1,000; FUZZ_RUNS=10000 for the long run) of random
 * paths, methods, headers, queries, bodies and tokens (valid, expired, from the future,
 * another tenant's, another lease's, tampered, high-S, garbage, huge). Seeded: the seed
 * is printed, FUZZ_SEED=<n> replays a run. Properties:
 * - every answer is either a success or the documented envelope, the only 5xx is 503,
 *   and no answer carries internal text (SQLite, stack frames, paths);
 * - a tenant route answers 2xx only to its lease owner's valid token, a callback never
 *   without a correct signature;
 * - providerd still answers /health after each route's run (no crash, no wedge);
 * - nothing a refused request could touch changed: the placement and payload stores,
 *   both backends' journals and provision counters, the chain height, and the replay
 *   store (which gains only the tokens /connection spends, as the reference does).
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 1_000);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 0x7fffffff));
console.log(`# route fuzz: seed ${SEED} (FUZZ_SEED=${SEED} replays), ${RUNS} runs per route`);

const BODY_LIMIT = 1_048_576; // max_request_body_size's default
const target = new FuzzTarget();
let wire: Wire;
let mint: TokenMint;
let a: ReturnType<typeof fuzzArbitraries>;

before(async () => {
  await target.start();
  wire = new Wire(target.api);
  mint = new TokenMint({ owner: target.owner, other: target.other, stranger: target.stranger });
  a = fuzzArbitraries(target.leases);
});

after(async () => {
  await wire?.close();
  await target.close();
});

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** What the server will see: the bearer token of the header, verified as src/auth does. */
function claimsOf(authorization: string | undefined): TokenClaims | undefined {
  const token = bearerToken(authorization);
  if (token === undefined) return undefined;
  try {
    return verifyTenantToken(token, { nowMs: Date.now() });
  } catch {
    return undefined;
  }
}

function leaseOfPath(path: string): string {
  try {
    return decodeURIComponent(path.split("/")[3] ?? "");
  } catch {
    return "";
  }
}

interface Built {
  method: string;
  target: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
  claims: TokenClaims | undefined;
}

function build(c: RequestCase, queryToken = false): Built {
  const headers: Record<string, string> = { ...c.headers };
  const authorization = mint.header(c.auth, nowSeconds());
  const query = new URLSearchParams(c.query);
  if (queryToken) {
    const token = mint.token(c.auth.token, nowSeconds());
    if (token !== undefined) query.set("token", token);
  } else if (authorization !== undefined) headers.authorization = authorization;
  const qs = query.toString();
  // undici refuses a body on GET/HEAD-less semantics only for HEAD; keep bodies elsewhere.
  const body = c.method === "HEAD" ? undefined : c.body;
  return {
    method: c.method,
    target: `${c.path}${qs === "" ? "" : `?${qs}`}`,
    headers,
    body,
    claims: queryToken ? claimsOf(`Bearer ${query.get("token") ?? ""}`) : claimsOf(authorization),
  };
}

/** The one token that may open a tenant route: the owner's, for this lease, of the right kind. */
function authorized(b: Built, path: string, kind: "access" | "payload"): boolean {
  const c = b.claims;
  return (
    c !== undefined &&
    c.tenant === target.ownerAddress &&
    c.kind === kind &&
    c.leaseUuid === leaseOfPath(path)
  );
}

function describeCase(b: Built, r: Reply): string {
  return `${b.method} ${b.target.slice(0, 300)} → ${r.status} ${r.text.slice(0, 300)}`;
}

interface RunStats {
  answers: Map<number, number>;
  spendable: Set<string>;
}

/** Runs one route's property for RUNS cases and checks liveness and state around it. */
async function fuzzRoute<T>(
  t: TestContext,
  name: string,
  arb: fc.Arbitrary<T>,
  check: (c: T, stats: RunStats) => Promise<void>,
  runs = RUNS,
): Promise<RunStats> {
  const seed = SEED + [...name].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) | 0, 0);
  t.diagnostic(`seed ${seed} (FUZZ_SEED=${SEED}), ${runs} cases`);
  const stats: RunStats = { answers: new Map(), spendable: new Set() };
  const before = await target.observe();
  await fc.assert(
    fc.asyncProperty(arb, (c) => check(c, stats)),
    // Shrinking replays many requests; FUZZ_SHRINK=1 asks for the minimal counterexample.
    { seed, numRuns: runs, endOnFailure: process.env.FUZZ_SHRINK !== "1", includeErrorInReport: true },
  );
  assert.ok(target.running(), `providerd died during ${name}\n${target.logTail()}`);
  const health = await fetch(`${target.api}/health`);
  assert.equal(health.status, 200, `providerd's /health after ${name}: ${await health.text()}`);
  await health.text().catch(() => {});
  assertUnchanged(name, before, await target.observe(), stats.spendable);
  t.diagnostic(
    `answers: ${[...stats.answers]
      .sort(([x], [y]) => x - y)
      .map(([s, n]) => `${s}×${n}`)
      .join(" ")}`,
  );
  return stats;
}

function count(stats: RunStats, r: Reply): void {
  stats.answers.set(r.status, (stats.answers.get(r.status) ?? 0) + 1);
}

function assertUnchanged(name: string, before: Observed, now: Observed, spendable: Set<string>): void {
  assert.equal(now.placements, before.placements, `${name}: the placement store changed`);
  assert.equal(now.payloads, before.payloads, `${name}: the payload store changed`);
  assert.equal(now.backends, before.backends, `${name}: a backend's journal or provision counters changed`);
  assert.equal(now.height, before.height, `${name}: a transaction reached the chain`);
  const nowMs = Date.now();
  for (const [key, expires] of now.tokens) {
    if (!before.tokens.has(key)) assert.ok(spendable.has(key), `${name}: the replay store gained ${key}`);
    else assert.equal(expires, before.tokens.get(key), `${name}: a replay row was rewritten`);
  }
  for (const [key, expires] of before.tokens) {
    if (!now.tokens.has(key)) assert.ok(expires <= nowMs, `${name}: an unexpired replay row vanished`);
  }
}

/** A tenant lease route over plain HTTP. */
function leaseRouteCheck(route: string, kind: "access" | "payload" = "access") {
  return async (c: RequestCase, stats: RunStats) => {
    let b = build(c);
    if (route === "data" && authorized(b, c.path, "payload") && Buffer.from(c.body ?? []).equals(MANIFEST)) {
      // The one upload that would be accepted: a changed byte makes it a hash refusal instead.
      b = { ...b, body: Buffer.concat([MANIFEST, Buffer.from("!")]) };
    }
    // Both replay-protected routes spend any access token that verifies, as the reference does.
    if ((route === "connection" || route === "restore") && b.claims?.kind === "access")
      stats.spendable.add(b.claims.replayKey);
    const r = await wire.http(b);
    count(stats, r);
    // Past the body limit the server may answer before reading it all and close the
    // connection; the client then sees its own write fail instead of the answer.
    if (r.transport !== undefined && (b.body?.length ?? 0) > BODY_LIMIT) return;
    const problem = answerProblem(r, b.method);
    assert.equal(problem, undefined, `${problem}\n${describeCase(b, r)}`);
    // A CORS preflight is answered at the edge, before any route: its 204 grants nothing.
    const preflight = b.method === "OPTIONS" && b.headers["access-control-request-method"] !== undefined;
    if (r.status >= 200 && r.status < 300 && !preflight) {
      assert.ok(authorized(b, c.path, kind), `2xx without the owner's token\n${describeCase(b, r)}`);
      assert.notEqual(route, "data", `an upload was accepted\n${describeCase(b, r)}`);
    }
  };
}

describe("route fuzz: providerd's listener over real HTTP", () => {
  for (const route of ["status", "provision", "logs", "releases", "connection"]) {
    it(`GET /v1/leases/{uuid}/${route}`, async (t) => {
      const stats = await fuzzRoute(t, route, a.leaseRoute(route), leaseRouteCheck(route));
      if (route === "status") assert.ok((stats.answers.get(200) ?? 0) > 0, "no case reached the handler");
    });
  }

  it("POST /v1/leases/{uuid}/data", async (t) => {
    await fuzzRoute(
      t,
      "data",
      a.leaseRoute("data", "POST", a.uploadBody),
      leaseRouteCheck("data", "payload"),
    );
  });

  it("POST /v1/leases/{uuid}/restore", async (t) => {
    // No lease here has retained data, so no case may be admitted: a 2xx is a failure.
    await fuzzRoute(
      t,
      "restore",
      a.leaseRoute("restore", "POST", a.restoreBody, "access"),
      async (c, stats) => {
        await leaseRouteCheck("restore")(c, stats);
        assert.ok(!(stats.answers.get(202) ?? 0), "a restore was admitted without retained data");
      },
    );
  });

  it("GET /v1/leases/{uuid}/events (WebSocket upgrades and plain requests)", async (t) => {
    const arb = fc.tuple(a.leaseRoute("events"), fc.constantFrom("header", "query", "plain"));
    await fuzzRoute(t, "events", arb, async ([c, mode], stats) => {
      const b = build(c, mode === "query");
      const r = mode === "plain" ? await wire.http(b) : await wire.ws(b.target, b.headers);
      count(stats, r);
      if (r.status === 101) {
        assert.ok(
          authorized(b, c.path, "access"),
          `upgrade without the owner's token\n${describeCase(b, r)}`,
        );
        for (const f of r.frames ?? []) {
          const frame = JSON.parse(f) as Record<string, unknown>;
          if (frame.type === "snapshot") {
            for (const k of ["lease_uuid", "status", "timestamp", "seq", "state"])
              assert.ok(k in frame, `snapshot without ${k}: ${f}`);
          }
        }
        return;
      }
      // ws reports a refused handshake it could not read as a transport error; the answer
      // was still an HTTP one (checked in the plain mode and by the same code path).
      const problem = answerProblem(r, b.method);
      assert.equal(problem, undefined, `${problem}\n${describeCase(b, r)} (${mode})`);
      const preflight = b.method === "OPTIONS" && b.headers["access-control-request-method"] !== undefined;
      if (r.status >= 200 && r.status < 300 && !preflight)
        assert.fail(`2xx on the events route\n${describeCase(b, r)}`);
    });
  });

  for (const path of ["/health", "/readyz", "/metrics", "/workloads", "/v1/provider"]) {
    it(`${path}`, async (t) => {
      await fuzzRoute(t, path, a.fixedRoute(path), async (c, stats) => {
        const b = build(c);
        const r = await wire.http(b);
        count(stats, r);
        const problem = answerProblem(r, b.method, { healthBody: path === "/readyz" });
        assert.equal(problem, undefined, `${problem}\n${describeCase(b, r)}`);
      });
    });
  }

  it("POST /callbacks/provision (nothing correctly signed)", async (t) => {
    const arb = callbackArbitrary(target.leases, SIDS);
    await fuzzRoute(t, "callbacks", arb, async (c: CallbackCase, stats) => {
      const uri = `/callbacks/provision?${c.query}`;
      const headers: Record<string, string> = { "content-type": "application/json", ...c.headers };
      const sig = c.signature;
      const now = nowSeconds();
      if (sig.t === "text") headers[SIGNATURE_HEADER] = sig.text;
      if (sig.t === "wrong-secret")
        headers[SIGNATURE_HEADER] = signRequest(hmacSecret(sig.secret), {
          method: "POST",
          uri,
          body: c.body,
          timestamp: now,
        });
      if (sig.t === "other-bytes") {
        const signedUri = sig.uri ?? uri;
        const signedBody = sig.body ?? c.body;
        const same = signedUri === uri && Buffer.from(signedBody).equals(Buffer.from(c.body));
        headers[SIGNATURE_HEADER] = signRequest(hmacSecret(SECRETS[sig.backend]!), {
          method: "POST",
          uri: same ? `${uri}&x=1` : signedUri,
          body: signedBody,
          timestamp: now,
        });
      }
      if (sig.t === "stale")
        headers[SIGNATURE_HEADER] = signRequest(hmacSecret(SECRETS[sig.backend]!), {
          method: "POST",
          uri,
          body: c.body,
          timestamp: now + sig.offsetSeconds,
        });
      if (sig.t === "other-backend") {
        // Signed correctly, but with a key of the backend the body does not name.
        let named = -1;
        try {
          named = SIDS.indexOf(
            (JSON.parse(Buffer.from(c.body).toString()) as Record<string, string>).backend_storage_id!,
          );
        } catch {
          // not JSON: either key is "another backend's"
        }
        const key = SECRETS[named === 0 ? 1 : 0]!;
        headers[SIGNATURE_HEADER] = signRequest(hmacSecret(key), {
          method: "POST",
          uri,
          body: c.body,
          timestamp: now,
        });
      }
      const b: Built = { method: "POST", target: uri, headers, body: c.body, claims: undefined };
      const r = await wire.http(b);
      count(stats, r);
      const problem = answerProblem(r, "POST");
      assert.equal(problem, undefined, `${problem}\n${describeCase(b, r)}`);
      assert.ok(
        r.status >= 400,
        `a callback without a correct signature answered ${r.status}\n${describeCase(b, r)}`,
      );
    });
  });

  it("random paths and methods", async (t) => {
    await fuzzRoute(t, "random", a.randomPath, async (c, stats) => {
      const b = build(c);
      const r = await wire.http(b);
      count(stats, r);
      const problem = answerProblem(r, b.method, { healthBody: b.target.startsWith("/readyz") });
      assert.equal(problem, undefined, `${problem}\n${describeCase(b, r)}`);
    });
  });

  it("raw bytes: broken request lines, header syntax, oversized heads", async (t) => {
    await fuzzRoute(
      t,
      "raw",
      rawArbitrary(),
      async (c, stats) => {
        const bytes = rawBytes(c);
        const r = await wire.raw(bytes);
        count(stats, r);
        const line = JSON.stringify(bytes.toString("latin1").slice(0, 200));
        // A connection may be closed without an answer only when the head was cut off.
        if (r.transport !== undefined) assert.fail(`no answer: ${r.transport}\n${line}`);
        const problem = answerProblem(r, c.line.split(" ")[0] ?? "", {
          healthBody: c.line.includes("/readyz"),
        });
        assert.equal(problem, undefined, `${problem}\n${line} → ${r.status} ${r.text.slice(0, 200)}`);
      },
      Math.max(1, Math.round(RUNS / 2)),
    );
  });
});

describe("answers the fuzz found outside the envelope (regressions)", () => {
  const head = (line: string, extra = "") =>
    Buffer.from(`${line}\r\nHost: 127.0.0.1\r\n${extra}Connection: close\r\n\r\n`, "latin1");
  const cases: [string, Buffer, number][] = [
    ["a broken request line (Node's parser)", head("G ET /health HTTP/1.1"), 400],
    [
      "a head over 16 KiB (Node's parser)",
      head("GET /health HTTP/1.1", `X-Big: ${"b".repeat(20_000)}\r\n`),
      431,
    ],
    ["an Expect other than 100-continue (Node)", head("GET /health HTTP/1.1", "Expect: x-fuzz\r\n"), 417],
    [
      "a lease segment over the router's cap (Fastify)",
      head(`GET /v1/leases/${"a".repeat(200)}/status HTTP/1.1`),
      414,
    ],
    ["a path that is not URL encoding (Fastify)", head("GET /v1/leases/%zz/status HTTP/1.1"), 400],
    [
      "a CONNECT request (Node hands it to the connect event)",
      head(
        "CONNECT /v1/leases/00000008-0915-49bd-b0bb-01912aca21cf/events HTTP/1.1",
        "M1-K-IZ: R6TB}F:Oj\r\n",
      ),
      405,
    ],
  ];
  for (const [name, bytes, status] of cases) {
    it(`${name}: ${status} in the envelope, with the security headers`, async () => {
      const r = await wire.raw(bytes);
      assert.equal(r.status, status, r.text);
      assert.equal(answerProblem(r, "GET"), undefined);
      assert.equal(r.headers["x-frame-options"], "DENY");
    });
  }
});
