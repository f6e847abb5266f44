import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  buildInstances,
  ImageReferenceError,
  imageRefusal,
  isImageAllowed,
  parseRegistry,
} from "../../../src/backend/kit/admission.ts";
import { WireError } from "../../../src/backend/kit/errors.ts";
import { parseItems } from "../../../src/backend/kit/server.ts";
import { CallbackUrlError, resolveCallbackUrls } from "../../../src/core/backend-contract/index.ts";
import { isFredError } from "../../../src/core/errors.ts";

const OP = "6ba7b811-9dad-41d1-80b4-00c04fd430c8";
const SKU = "0190f3a2-7c1e-7000-8000-00000000a001";

describe("image registry parsing", () => {
  const cases: [string, string][] = [
    ["nginx", "docker.io"],
    ["nginx:1.25", "docker.io"],
    ["library/nginx", "docker.io"],
    ["docker.io/library/nginx:1.25", "docker.io"],
    ["index.docker.io/library/nginx", "docker.io"],
    ["ghcr.io/org/app:v1", "ghcr.io"],
    ["localhost/app", "localhost"],
    ["registry.local:5000/team/app:2", "registry.local:5000"],
    [`quay.io/org/app@sha256:${"a".repeat(64)}`, "quay.io"],
  ];
  for (const [image, domain] of cases) {
    it(`${image} → ${domain}`, () => assert.equal(parseRegistry(image), domain));
  }
  for (const bad of ["", "UPPER/case", "nginx:", "a//b", "nginx@sha256:zz", "-bad"]) {
    it(`refuses ${JSON.stringify(bad)}`, () =>
      assert.throws(
        () => parseRegistry(bad),
        (err) => err instanceof ImageReferenceError && isFredError(err, "ERR_IMAGE_REFERENCE"),
      ));
  }
  it("allows by exact domain only (port included, no wildcards)", () => {
    assert.equal(isImageAllowed("nginx", ["docker.io"]), true);
    assert.equal(isImageAllowed("registry.local:5000/app", ["registry.local"]), false);
    assert.equal(isImageAllowed("registry.local:5000/app", ["registry.local:5000"]), true);
    assert.equal(isImageAllowed("sub.ghcr.io/app", ["ghcr.io"]), false);
    assert.equal(isImageAllowed("", ["docker.io"]), false);
    assert.match(imageRefusal("quay.io/x/y", ["docker.io"]) ?? "", /quay\.io.*not allowed/);
    assert.equal(imageRefusal("nginx", ["docker.io"]), undefined);
  });
});

describe("callback URL rules", () => {
  const base = `http://fred.example:8080/callbacks/provision?operation_id=${OP}`;
  it("derives the lifecycle URL by renaming operation_id", () => {
    const r = resolveCallbackUrls(base, undefined);
    assert.equal(r.operationId, OP);
    assert.equal(r.lifecycleUrl, `http://fred.example:8080/callbacks/provision?lifecycle_id=${OP}`);
    assert.deepEqual(resolveCallbackUrls(base, r.lifecycleUrl), r);
  });
  it("keeps other query parameters byte for byte", () => {
    const url = `https://h/cb?a=1&operation_id=${OP}&b=%20x`;
    assert.equal(
      resolveCallbackUrls(url, undefined).lifecycleUrl,
      `https://h/cb?a=1&lifecycle_id=${OP}&b=%20x`,
    );
  });
  const bad: [string, unknown, unknown][] = [
    ["missing", undefined, undefined],
    ["not a URL", "not a url", undefined],
    ["ftp scheme", `ftp://h/cb?operation_id=${OP}`, undefined],
    ["no operation_id", "http://h/cb", undefined],
    ["two operation_ids", `${base}&operation_id=${OP}`, undefined],
    ["uppercase id", `http://h/cb?operation_id=${OP.toUpperCase()}`, undefined],
    ["v7 id", "http://h/cb?operation_id=0190f3a2-7c1e-7000-8000-000000000001", undefined],
    ["lifecycle_id on the operation URL", `${base}&lifecycle_id=${OP}`, undefined],
    ["credentials", `http://u:p@h/cb?operation_id=${OP}`, undefined],
    ["lifecycle not derived", base, `http://other/cb?lifecycle_id=${OP}`],
  ];
  for (const [name, cb, lc] of bad) {
    it(`refuses ${name}`, () => assert.throws(() => resolveCallbackUrls(cb, lc), CallbackUrlError));
  }
});

describe("lease items", () => {
  it("treats a single unnamed item as service app and freezes profiles per instance", () => {
    const items = parseItems([{ sku: SKU, quantity: 2 }]);
    const inst = buildInstances("L", items, () => ({ cpu_cores: 1, memory_mb: 2, disk_mb: 3 }));
    assert.deepEqual(
      inst.map((i) => i.key),
      ["L-app-0", "L-app-1"],
    );
  });
  it("sorts services by name", () => {
    const items = parseItems([
      { sku: SKU, quantity: 1, service_name: "web" },
      { sku: SKU, quantity: 1, service_name: "db" },
    ]);
    const inst = buildInstances("L", items, () => ({ cpu_cores: 1, memory_mb: 1, disk_mb: 0 }));
    assert.deepEqual(
      inst.map((i) => i.service),
      ["db", "web"],
    );
  });
  it("refuses an unknown SKU with validation code unknown_sku", () => {
    const err = (() => {
      try {
        buildInstances("L", parseItems([{ sku: SKU, quantity: 1 }]), () => undefined);
      } catch (e) {
        return e;
      }
    })();
    assert.ok(err instanceof WireError);
    assert.equal(err.validationCode, "unknown_sku");
  });
  const bad: [string, unknown][] = [
    ["not an array", {}],
    ["empty", []],
    [
      "mixed named/unnamed",
      [
        { sku: SKU, quantity: 1, service_name: "a" },
        { sku: SKU, quantity: 1 },
      ],
    ],
    [
      "duplicate names",
      [
        { sku: SKU, quantity: 1, service_name: "a" },
        { sku: SKU, quantity: 1, service_name: "a" },
      ],
    ],
    ["bad service name", [{ sku: SKU, quantity: 1, service_name: "Web_1" }]],
    ["fractional quantity", [{ sku: SKU, quantity: 1.5 }]],
    ["quantity too large", [{ sku: SKU, quantity: 1001 }]],
  ];
  for (const [name, value] of bad)
    it(`refuses ${name}`, () => assert.throws(() => parseItems(value), WireError));
});
