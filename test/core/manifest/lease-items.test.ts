import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  isValidCustomDomain,
  itemServiceNames,
  type LeaseItem,
  matchManifestToItems,
  parseLeaseItems,
} from "../../../src/core/lease-items.ts";
import type { Problem } from "../../../src/core/manifest/index.ts";
import { expectValid, flat } from "./helpers.ts";

const SKU = "0190f3a2-7c1e-7000-8000-0000000000aa";
const SKU_V4 = "3b241101-e2bb-4255-8caf-4136c566a962";
const item = (fields: Record<string, unknown> = {}) => ({ sku_uuid: SKU, quantity: 1, ...fields });

function validItems(input: unknown): LeaseItem[] {
  const result = parseLeaseItems(input);
  assert.ok(result.ok, `expected valid items, got ${JSON.stringify(result.ok ? [] : result.problems)}`);
  return result.items;
}

function itemProblem(input: unknown, path: string, message: RegExp): void {
  const result = parseLeaseItems(input);
  assert.ok(!result.ok, `expected problems for ${JSON.stringify(input)}`);
  assert.ok(
    result.problems.some((p) => p.path === path && message.test(p.message) && p.document === "items"),
    `expected an items problem at ${JSON.stringify(path)} matching ${message}, got ${JSON.stringify(result.problems)}`,
  );
}

describe("lease items: single item", () => {
  it("accepts one unnamed item (absent or empty service_name) and calls it app", () => {
    assert.deepEqual(itemServiceNames(validItems([item()])), ["app"]);
    assert.deepEqual(itemServiceNames(validItems([item({ service_name: "" })])), ["app"]);
  });

  it("accepts one named item", () => {
    assert.deepEqual(itemServiceNames(validItems([item({ service_name: "web" })])), ["web"]);
  });

  it("needs at least one item, at most 100, in an array", () => {
    itemProblem([], "", /at least one item/);
    assert.equal(
      validItems(Array.from({ length: 100 }, (_, i) => item({ service_name: `s${i}` }))).length,
      100,
    );
    itemProblem(
      Array.from({ length: 101 }, (_, i) => item({ service_name: `s${i}` })),
      "",
      /at most 100/,
    );
    itemProblem({ sku_uuid: SKU, quantity: 1 }, "", /array/);
  });
});

describe("lease items: fields", () => {
  it("sku_uuid is a canonical lowercase UUID of any version", () => {
    validItems([item({ sku_uuid: SKU_V4 })]);
    itemProblem([item({ sku_uuid: SKU.toUpperCase() })], "/0/sku_uuid", /canonical lowercase UUID/);
    itemProblem([item({ sku_uuid: `{${SKU}}` })], "/0/sku_uuid", /canonical/);
    itemProblem([item({ sku_uuid: SKU.replaceAll("-", "") })], "/0/sku_uuid", /canonical/);
    itemProblem([{ quantity: 1 }], "/0/sku_uuid", /required/);
  });

  it("quantity is 1 … 1e9, as a JSON integer or a chain-style decimal string", () => {
    assert.equal(validItems([item({ quantity: 1_000_000_000 })])[0]?.quantity, 1_000_000_000);
    assert.equal(validItems([item({ quantity: "3" })])[0]?.quantity, 3);
    itemProblem([item({ quantity: 0 })], "/0/quantity", /between 1 and/);
    itemProblem([item({ quantity: 1_000_000_001 })], "/0/quantity", /between 1 and/);
    itemProblem([item({ quantity: 1.5 })], "/0/quantity", /whole number/);
    itemProblem([item({ quantity: "-1" })], "/0/quantity", /whole number/);
    itemProblem([item({ quantity: "0" })], "/0/quantity", /between 1 and/);
  });

  it("service_name is a DNS label", () => {
    validItems([item({ service_name: "web-1" })]);
    itemProblem([item({ service_name: "Web" })], "/0/service_name", /DNS label/);
    itemProblem([item({ service_name: "x".repeat(64) })], "/0/service_name", /DNS label/);
  });

  it("custom_domain is empty or a lowercase FQDN", () => {
    validItems([item({ custom_domain: "" })]);
    validItems([item({ custom_domain: "shop.example.com" })]);
    itemProblem([item({ custom_domain: "Shop.example.com" })], "/0/custom_domain", /fully qualified/);
    for (const bad of [
      "localhost",
      "a..b.com",
      "-a.com",
      "example.123",
      "https://a.com",
      `${"a".repeat(250)}.com`,
    ])
      assert.equal(isValidCustomDomain(bad), false, bad);
  });

  it("accepts chain output with locked_price but no other unknown keys", () => {
    validItems([item({ locked_price: { denom: "umfx", amount: "10" } })]);
    itemProblem([item({ sku: SKU })], "/0/sku", /unknown field "sku"/);
  });
});

describe("lease items: naming modes", () => {
  it("accepts several named items, also on one SKU", () => {
    validItems([item({ service_name: "web" }), item({ service_name: "db" })]);
  });

  it("refuses more than one unnamed item", () => {
    itemProblem([item(), item({ sku_uuid: SKU_V4 })], "", /more than one unnamed item/);
  });

  it("refuses mixed named and unnamed items", () => {
    itemProblem(
      [item({ service_name: "web" }), item({ service_name: "" })],
      "/1",
      /all named or all unnamed/,
    );
  });

  it("refuses duplicate names", () => {
    itemProblem(
      [item({ service_name: "web" }), item({ service_name: "db" }), item({ service_name: "web" })],
      "/2/service_name",
      /duplicate service_name "web"/,
    );
  });
});

describe("matchManifestToItems (1:1 by service name)", () => {
  const stack = expectValid({ services: { web: flat({}), db: flat({}) } });
  const flatManifest = expectValid(flat({}));
  const named = (...names: string[]) => validItems(names.map((service_name) => item({ service_name })));
  const messages = (problems: Problem[]) => problems.map((p) => p.message);

  it("a flat manifest fits one unnamed item or one item named app", () => {
    assert.deepEqual(matchManifestToItems(flatManifest, validItems([item()])), []);
    assert.deepEqual(matchManifestToItems(flatManifest, named("app")), []);
  });

  it("a flat manifest does not fit an item named otherwise", () => {
    const problems = matchManifestToItems(flatManifest, named("web"));
    assert.deepEqual(problems, [
      { path: "", message: 'manifest service "app" has no matching lease item' },
      { path: "/0", document: "items", message: 'lease item service "web" has no matching manifest service' },
    ]);
  });

  it("a stack fits items with the same names in any order", () => {
    assert.deepEqual(matchManifestToItems(stack, named("db", "web")), []);
  });

  it("reports a service without an item", () => {
    assert.deepEqual(matchManifestToItems(stack, named("web")), [
      { path: "/services/db", message: 'manifest service "db" has no matching lease item' },
    ]);
  });

  it("reports an item without a service", () => {
    const problems = matchManifestToItems(stack, named("web", "db", "cache"));
    assert.deepEqual(messages(problems), ['lease item service "cache" has no matching manifest service']);
    assert.equal(problems[0]?.path, "/2");
  });

  it("reports duplicate item names even when handed unchecked items", () => {
    const items = [
      item({ service_name: "web" }),
      item({ service_name: "db" }),
      item({ service_name: "web" }),
    ];
    assert.deepEqual(messages(matchManifestToItems(stack, items)), ['duplicate service_name "web"']);
  });
});
