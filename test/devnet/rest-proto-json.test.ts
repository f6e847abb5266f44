/**
 * The REST gateway's protobuf JSON and query-parameter rules on their own (no devnet): the
 * shapes gogoproto's jsonpb writes with OrigName and EmitDefaults for messages the devnet
 * answers with, and the request fields grpc-gateway fills from a query string.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { QueryDenomMetadataResponse } from "cosmjs-types/cosmos/bank/v1beta1/query";
import { GetTxsEventRequest, OrderBy } from "cosmjs-types/cosmos/tx/v1beta1/service";
import { ModeInfo } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import { Duration } from "cosmjs-types/google/protobuf/duration";
import { QueryLeaseResponse, QueryLeasesByTenantRequest } from "../../src/chain/proto/index.ts";
import { RestError } from "../../src/devnet/rest/errors.ts";
import { type AnyCodec, messageJson, timestampJson } from "../../src/devnet/rest/proto-json.ts";
import { buildRequest } from "../../src/devnet/rest/request-params.ts";
import { QUERY_ROUTES } from "../../src/devnet/rest/routes.ts";
import { BODY_ROUTES } from "../../src/devnet/rest/server.ts";

const codec = (c: unknown) => c as AnyCodec;

describe("gateway JSON of a message", () => {
  it("writes bank denom metadata with the proto's field names and every field present", () => {
    const value = QueryDenomMetadataResponse.fromPartial({
      metadata: {
        description: "power",
        denomUnits: [
          { denom: "upwr", exponent: 0, aliases: [] },
          { denom: "pwr", exponent: 6, aliases: ["PWR"] },
        ],
        base: "upwr",
        display: "pwr",
        name: "PWR",
        symbol: "PWR",
      },
    });
    assert.deepEqual(messageJson(codec(QueryDenomMetadataResponse), value), {
      metadata: {
        description: "power",
        denom_units: [
          { denom: "upwr", exponent: 0, aliases: [] },
          { denom: "pwr", exponent: 6, aliases: ["PWR"] },
        ],
        base: "upwr",
        display: "pwr",
        name: "PWR",
        symbol: "PWR",
        uri: "",
        uri_hash: "",
      },
    });
  });

  it("writes a lease of our field-table codecs: enum by name, uint64 as string, unset times and empty bytes as null", () => {
    const lease = QueryLeaseResponse.fromPartial({
      lease: {
        uuid: "u",
        tenant: "t",
        providerUuid: "p",
        state: 3,
        createdAt: { seconds: 1_700_000_000n, nanos: 5_000_000 },
        minLeaseDurationAtCreation: 3600n,
        items: [{ skuUuid: "s", quantity: 2n, lockedPrice: { denom: "upwr", amount: "10" } }],
      },
    });
    const json = messageJson(codec(QueryLeaseResponse), lease) as { lease: Record<string, unknown> };
    assert.equal(json.lease.state, "LEASE_STATE_CLOSED");
    assert.equal(json.lease.created_at, "2023-11-14T22:13:20.005Z");
    assert.equal(json.lease.closed_at, null);
    assert.equal(json.lease.meta_hash, null);
    assert.equal(json.lease.min_lease_duration_at_creation, "3600");
    assert.deepEqual(json.lease.items, [
      {
        sku_uuid: "s",
        quantity: "2",
        locked_price: { denom: "upwr", amount: "10" },
        service_name: "",
        custom_domain: "",
      },
    ]);
  });

  it("writes Timestamps and Durations with 0, 3, 6 or 9 fraction digits, and only the set member of a oneof", () => {
    assert.equal(timestampJson({ seconds: 0n, nanos: 0 }), "1970-01-01T00:00:00Z");
    assert.equal(timestampJson({ seconds: 0n, nanos: 500_000_000 }), "1970-01-01T00:00:00.500Z");
    assert.equal(timestampJson({ seconds: 0n, nanos: 1_500 }), "1970-01-01T00:00:00.000001500Z");
    assert.equal(
      messageJson(codec(Duration), Duration.fromPartial({ seconds: 90n, nanos: 250_000 })),
      "90.000250s",
    );
    assert.deepEqual(messageJson(codec(ModeInfo), ModeInfo.fromPartial({ single: { mode: 1 } })), {
      single: { mode: "SIGN_MODE_DIRECT" },
    });
  });
});

describe("request fields from query parameters", () => {
  it("fills nested fields by proto name, parses integers, booleans, base64 and enums, and ignores unknown names", () => {
    const req = buildRequest(codec(GetTxsEventRequest), [
      ["query", ["tx.height=5"]],
      ["order_by", ["ORDER_BY_DESC"]],
      ["limit", ["7"]],
      ["pagination.key", ["dXB3cg=="]],
      ["pagination.count_total", ["true"]],
      ["events", ["a='1'", "b='2'"]],
      ["colour", ["blue"]],
    ]) as GetTxsEventRequest;
    assert.equal(req.query, "tx.height=5");
    assert.equal(req.orderBy, OrderBy.ORDER_BY_DESC);
    assert.equal(req.limit, 7n);
    assert.equal(Buffer.from(req.pagination!.key).toString(), "upwr");
    assert.equal(req.pagination!.countTotal, true);
    assert.deepEqual(req.events, ["a='1'", "b='2'"]);
  });

  it("lets a path parameter win over a query parameter of the same name, and reads our enums by name or number", () => {
    const req = buildRequest(codec(QueryLeasesByTenantRequest), [
      ["tenant", ["from-path"]],
      ["tenant", ["from-query"]],
      ["state_filter", ["LEASE_STATE_PENDING"]],
    ]) as { tenant: string; stateFilter: number };
    assert.equal(req.tenant, "from-path");
    assert.equal(req.stateFilter, 1);
    const byNumber = buildRequest(codec(QueryLeasesByTenantRequest), [["state_filter", ["2"]]]) as {
      stateFilter: number;
    };
    assert.equal(byNumber.stateFilter, 2);
  });

  it("refuses unparsable values with InvalidArgument", () => {
    const refuses = (params: [string, string[]][], message: RegExp) =>
      assert.throws(
        () => buildRequest(codec(GetTxsEventRequest), params),
        (err: unknown) =>
          err instanceof RestError && err.code === 3 && err.httpStatus === 400 && message.test(err.message),
      );
    refuses([["limit", ["ten"]]], /invalid syntax/);
    refuses([["pagination.reverse", ["yes"]]], /ParseBool/);
    refuses([["pagination.key", ["%%%"]]], /base64/);
    refuses([["order_by", ["SIDEWAYS"]]], /not a valid value/);
    refuses([["query", ["a", "b"]]], /too many values/);
  });
});

describe("docs/devnet.md", () => {
  it("lists every path the REST gateway serves, with its method and gRPC method", () => {
    const docs = readFileSync(new URL("../../docs/devnet.md", import.meta.url), "utf8");
    const rows = [
      ...QUERY_ROUTES.map((r) => ["GET", r.template, r.method] as const),
      ...BODY_ROUTES.map((r) => ["POST", r.template, r.method] as const),
    ];
    for (const [method, template, grpc] of rows)
      assert.ok(
        docs.includes(`| ${method} | \`${template}\` | \`${grpc.slice(1)}\` |`),
        `${method} ${template}`,
      );
  });
});
