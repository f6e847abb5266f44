import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { hmacSecret, signRequest } from "../../../src/auth/hmac.ts";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { SECRETS, SIDS, Stack } from "./stack.ts";

/**
 * Callback ingress refusals against a running providerd: each bad request gets its
 * documented status and changes nothing (the lease stays ACTIVE on its owner, the
 * placement record is untouched).
 */
const stack = new Stack();
let lease: string;
let snapshot: string;

before(async () => {
  // Budgets small enough that the junk burst below is limited however slowly a busy
  // machine delivers it (the defaults, 100/s burst 200, let 260 requests through when
  // they spread over ~1 s), and large enough for the one-by-one requests of the others.
  await stack.start(undefined, (s) => {
    s.extraConfig = { callback_rate_limit_rps: 20, callback_rate_limit_burst: 40 };
  });
  await stack.startProviderd();
  [lease] = (await stack.createLeases(1, "docker-small")) as [string];
  await stack.waitState([lease], "LEASE_STATE_ACTIVE");
  snapshot = records();
});

after(async () => {
  await stack.close();
});

function records(): string {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return JSON.stringify({
      placements: s.placements.placements(),
      attempts: s.placements.unresolvedAttempts(),
    });
  } finally {
    s.close();
  }
}

interface Send {
  query?: string;
  body?: unknown;
  rawBody?: string;
  secret?: string;
  signature?: string | null;
  timestamp?: number;
}

async function send(o: Send): Promise<Response> {
  const uri = `/callbacks/provision?${o.query ?? `operation_id=${newUuidV4()}`}`;
  const body =
    o.rawBody ??
    JSON.stringify(
      o.body ?? { lease_uuid: lease, status: "success", error: "", backend_storage_id: SIDS[0] },
    );
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (o.signature !== null) {
    headers["x-fred-signature"] =
      o.signature ??
      signRequest(hmacSecret(o.secret ?? SECRETS[0]!), {
        method: "POST",
        uri,
        body,
        timestamp: o.timestamp ?? Math.floor(Date.now() / 1000),
      });
  }
  return fetch(`${stack.api}${uri}`, { method: "POST", headers, body });
}

async function expectStatus(o: Send, status: number, what: string): Promise<void> {
  const res = await send(o);
  assert.equal(res.status, status, what);
  if (status !== 200) {
    const body = (await res.json()) as { error: string; code: number };
    assert.equal(body.code, status, what);
    assert.ok(body.error.length > 0, what);
  }
}

describe("POST /callbacks/provision refusals (devnet + providerd + mock backends)", () => {
  it("refuses missing, malformed, wrong-key and stale signatures with 401", async () => {
    await expectStatus({ signature: null }, 401, "no signature");
    await expectStatus(
      { signature: `t=${Math.floor(Date.now() / 1000)},sha256=${"0".repeat(64)}` },
      401,
      "bad MAC",
    );
    await expectStatus({ signature: "garbage" }, 401, "malformed header");
    await expectStatus({ timestamp: Math.floor(Date.now() / 1000) - 600 }, 401, "stale signature");
    await expectStatus({ secret: SECRETS[1] }, 401, "another backend's key for mock-1's storage id");
    await expectStatus(
      { body: { lease_uuid: lease, status: "success", backend_storage_id: newUuidV4() } },
      401,
      "unknown storage id",
    );
  });

  it("refuses malformed bodies and capability queries with 400", async () => {
    const id = newUuidV4();
    await expectStatus({ rawBody: "{not json" }, 400, "not JSON");
    await expectStatus({ rawBody: '{"lease_uuid":"a","lease_uuid":"b"}' }, 400, "duplicate keys");
    await expectStatus({ query: `operation_id=${id}&lifecycle_id=${id}` }, 400, "both ids");
    await expectStatus({ query: `operation_id=${id}&operation_id=${id}` }, 400, "duplicate id");
    await expectStatus({ query: "" }, 400, "no id");
    await expectStatus({ query: `operation_id=${id.toUpperCase()}` }, 400, "uppercase operation id");
    await expectStatus({ query: `operation_id={${id}}` }, 400, "braced operation id");
    await expectStatus(
      { body: { lease_uuid: lease.toUpperCase(), status: "success", backend_storage_id: SIDS[0] } },
      400,
      "uppercase lease UUID",
    );
    await expectStatus(
      { body: { lease_uuid: lease, status: "done", backend_storage_id: SIDS[0] } },
      400,
      "unknown status",
    );
    await expectStatus({ body: { lease_uuid: lease, status: "success" } }, 400, "no backend_storage_id");
    await expectStatus(
      { body: { lease_uuid: lease, status: "deprovisioned", backend_storage_id: SIDS[0] } },
      400,
      "deprovisioned on an operation URL",
    );
    await expectStatus(
      { body: { lease_uuid: lease, status: "success", retained: true, backend_storage_id: SIDS[0] } },
      400,
      "retained with success",
    );
    assert.equal(records(), snapshot);
  });

  it("answers 200 and changes nothing for an unknown operation id or a non-owner lifecycle report", async () => {
    await expectStatus({}, 200, "unknown operation id, success");
    await expectStatus(
      { body: { lease_uuid: lease, status: "failed", error: "boom", backend_storage_id: SIDS[0] } },
      200,
      "unknown operation id, failed",
    );
    await expectStatus(
      {
        query: `lifecycle_id=${newUuidV4()}`,
        secret: SECRETS[1],
        body: { lease_uuid: lease, status: "deprovisioned", backend_storage_id: SIDS[1] },
      },
      200,
      "deprovisioned from a backend that does not own the lease",
    );
    assert.equal(records(), snapshot);
    assert.equal(await stack.leaseState(lease), "LEASE_STATE_ACTIVE");
  });

  it("rate-limits unauthenticated junk without starving a verified backend", async () => {
    const junk = await Promise.all(
      Array.from({ length: 260 }, () =>
        fetch(`${stack.api}/callbacks/provision?operation_id=x`, { method: "POST", body: "{}" }),
      ),
    );
    const limited = junk.filter((r) => r.status === 429);
    assert.ok(limited.length > 0, "some junk requests are rate limited");
    assert.ok(Number(limited[0]!.headers.get("retry-after")) >= 1);
    await expectStatus({}, 200, "a signed callback still reaches its own storage bucket");
    assert.equal(records(), snapshot);
  });
});

describe("a backend key rotation (devnet + providerd + mock backends)", () => {
  const NEW = "rotated-mock-1-secret-0123456789abcdefghij";
  const OLD = SECRETS[0]!;

  it("a callback signed with hmac_secret_previous is applied; one signed with neither key is refused", async () => {
    // Step 1 of the runbook: providerd keeps signing with the old key and accepts the new one.
    await stack.stopProviderd();
    stack.writeConfig([{ hmacSecret: OLD, hmacSecretPrevious: NEW }]);
    await stack.startProviderd();
    // Step 2: the backend signs its callbacks with the new key and still accepts the old one.
    stack.mockEnvs[0] = {
      ...stack.mockEnvs[0]!,
      MOCK_BACKEND_CALLBACK_SECRET: NEW,
      MOCK_BACKEND_PREVIOUS_CALLBACK_SECRET: OLD,
    };
    await stack.stopMock(0);
    await stack.restartMock(0);
    // A new lease only turns ACTIVE once mock-1's success callback, signed with NEW, is applied.
    const [fresh] = (await stack.createLeases(1, "docker-small")) as [string];
    await stack.waitState([fresh], "LEASE_STATE_ACTIVE");
    await expectStatus(
      { body: { lease_uuid: fresh, status: "success", error: "", backend_storage_id: SIDS[0] }, secret: NEW },
      200,
      "the previous key verifies",
    );
    await expectStatus(
      { secret: "some-other-secret-0123456789abcdefghijklmn" },
      401,
      "neither current nor previous",
    );
  });
});
