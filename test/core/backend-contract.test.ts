import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import fc from "fast-check";
import { Journal } from "../../src/backend/kit/journal/journal.ts";
import { provisionInfo } from "../../src/backend/kit/views.ts";
import {
  type Capability,
  leasePath,
  mutationPath,
  parseCallbackBody,
  parseCapability,
  parseWith,
  provisionInfoSchema,
  provisionRequestSchema,
  provisionsPageSchema,
  resolveCallbackUrls,
} from "../../src/core/backend-contract/index.ts";

/**
 * The contract is one definition read by both sides: what the kit builds, providerd's
 * readers accept, and a callback URL the kit accepts is one whose callbacks providerd
 * accepts (the two read its query with the same rule).
 */
const OP = "6ba7b811-9dad-41d1-80b4-00c04fd430c8";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const SKU = "0190f3a2-7c1e-7000-8000-00000000a001";

const query = (url: string) => (url.includes("?") ? url.slice(url.indexOf("?") + 1) : "");

describe("backend contract: one definition for both sides", () => {
  it("builds the routes both sides use", () => {
    assert.equal(mutationPath("provision"), "/provision");
    assert.equal(mutationPath("deprovision", OP), `/_fred/storage/${OP}/deprovision`);
    assert.equal(leasePath("logs", LEASE), `/logs/${LEASE}`);
  });

  it("a callback URL the kit accepts yields callbacks providerd accepts, and no other", () => {
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
    console.log(`callback URL property seed: ${seed}`);
    const part = fc.constantFrom(
      `operation_id=${OP}`,
      `lifecycle_id=${OP}`,
      "operation_id",
      "lifecycle_id=",
      `operation_id=${OP.toUpperCase()}`,
      "a=1",
      "b=%20x",
      "",
    );
    fc.assert(
      fc.property(fc.array(part, { maxLength: 4 }), (parts) => {
        const url = `http://fred.example:8080/callbacks/provision?${parts.join("&")}`;
        let urls: ReturnType<typeof resolveCallbackUrls>;
        try {
          urls = resolveCallbackUrls(url, undefined);
        } catch {
          // Refused by the kit: providerd would not take this URL's operation callbacks either.
          const cap = parseCapability(query(url));
          assert.ok(!("kind" in cap && cap.kind === "operation"), `kit refused ${url}`);
          return;
        }
        assert.deepEqual(parseCapability(query(urls.callbackUrl)), { kind: "operation", id: OP });
        assert.deepEqual(parseCapability(query(urls.lifecycleUrl)), { kind: "lifecycle", id: OP });
      }),
      { numRuns: 500, seed },
    );
  });

  it("the kit's outbox bodies pass providerd's callback reader on their own URLs", () => {
    const journal = new Journal({
      path: ":memory:",
      mode: "bind-or-verify",
      storageId: randomUUID(),
      backendName: "contract-test",
    });
    try {
      const op = randomUUID();
      const a = journal.admitOperation({
        leaseUuid: LEASE,
        tenant: "t",
        providerUuid: randomUUID(),
        operationId: op,
        callbackUrl: `http://h/callbacks/provision?operation_id=${op}`,
        lifecycleUrl: `http://h/callbacks/provision?lifecycle_id=${op}`,
        items: [{ sku: SKU, quantity: 1 }],
        instances: [],
        payload: undefined,
        payloadHash: undefined,
        image: "",
        requestDigest: "digest",
        nowMs: 0,
      });
      const started = journal.markStarted(LEASE, a.generation);
      assert.ok(started && journal.settleSuccess(LEASE, started.generation, 1));
      const lease = journal.getLease(LEASE);
      assert.ok(lease);
      const page = parseWith(
        provisionsPageSchema,
        JSON.parse(JSON.stringify({ provisions: [provisionInfo(lease)] })),
      );
      assert.ok(page.ok);
      assert.deepEqual(page.value.items[0]?.lifecycleGeneration, { kind: "typed", id: op });
      // The row's items report the applied custom domains: none yet, then the recorded one.
      assert.deepEqual(page.value.items[0]?.customDomains, []);
      assert.ok(
        journal.setCustomDomains(LEASE, [{ sku: SKU, quantity: 1, custom_domain: "app.example.com" }]),
      );
      const row = (body: unknown) => {
        const p = parseWith(provisionsPageSchema, JSON.parse(JSON.stringify({ provisions: [body] })));
        assert.ok(p.ok);
        return p.value.items[0];
      };
      const withDomain = provisionInfo(journal.getLease(LEASE)!);
      assert.deepEqual(row(withDomain)?.customDomains, [{ service: "", domain: "app.example.com" }]);
      // An older backend's row without items, or items off the shape, reports nothing.
      const { items: _, ...noItems } = withDomain;
      assert.equal(row(noItems)?.customDomains, undefined);
      assert.equal(row({ ...noItems, items: "web" })?.customDomains, undefined);
      assert.ok(parseWith(provisionInfoSchema, provisionInfo(lease)).ok);

      const closing = journal.beginClose(LEASE, 2);
      assert.ok(closing.kind === "closing" && journal.completeClose(LEASE, closing.lease.generation, 3));
      const seen: string[] = [];
      for (let row = journal.outboxHead(LEASE); row; row = journal.outboxHead(LEASE)) {
        const cap = parseCapability(query(row.url));
        assert.ok("kind" in cap, row.url);
        const parsed = parseCallbackBody(JSON.parse(row.body), cap as Capability);
        assert.ok(parsed.ok, parsed.ok ? "" : parsed.problem);
        assert.equal(parsed.callback.storageId, journal.storageId);
        seen.push(`${cap.kind}:${parsed.callback.status}`);
        journal.removeDelivered(row);
      }
      assert.deepEqual(seen, ["operation:success", "lifecycle:deprovisioned"]);
    } finally {
      journal.close();
    }
  });

  it("reports the first problem in field order, naming the field as sent", () => {
    const body = (items: unknown[]) => ({
      lease_uuid: LEASE,
      tenant: "t",
      provider_uuid: LEASE,
      items,
      callback_url: "not a url",
    });
    const unnamed = { sku: SKU, quantity: 1 };
    assert.deepEqual(parseWith(provisionRequestSchema, body([unnamed, unnamed])), {
      ok: false,
      problem: "only a single item may omit service_name",
    });
    assert.deepEqual(parseWith(provisionRequestSchema, body([unnamed, { sku: "nope", quantity: 0 }])), {
      ok: false,
      problem: "items[1].sku must be a canonical lowercase UUID",
    });
    assert.deepEqual(parseWith(provisionRequestSchema, body([unnamed])), {
      ok: false,
      problem: "callback_url is not a valid URL",
    });
  });
});
