import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { splitHostPort } from "../../src/core/host-port.ts";

describe("splitHostPort", () => {
  it("splits listen addresses, authorities and Host headers", () => {
    assert.deepEqual(splitHostPort("127.0.0.1:8080"), { host: "127.0.0.1", port: "8080", bracketed: false });
    assert.deepEqual(splitHostPort(":0"), { host: "", port: "0", bracketed: false });
    assert.deepEqual(splitHostPort("[::1]:443"), { host: "::1", port: "443", bracketed: true });
    assert.deepEqual(splitHostPort("[::1]"), { host: "::1", port: undefined, bracketed: true });
    assert.deepEqual(splitHostPort("example.com"), {
      host: "example.com",
      port: undefined,
      bracketed: false,
    });
  });

  it("refuses a bracket left open and text after the bracket that is not a port", () => {
    assert.equal(splitHostPort("[::1"), undefined);
    assert.equal(splitHostPort("[::1]8080"), undefined);
    assert.equal(splitHostPort("[::1]x:80"), undefined);
  });
});
