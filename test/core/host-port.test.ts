import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isLoopbackHost, listenAddress, splitHostPort } from "../../src/core/host-port.ts";

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

describe("listenAddress", () => {
  it("reads host:port, :port and [v6]:port with a numeric port", () => {
    assert.deepEqual(listenAddress("127.0.0.1:8080"), { host: "127.0.0.1", port: 8080 });
    assert.deepEqual(listenAddress(":0"), { host: "", port: 0 });
    assert.deepEqual(listenAddress("[::1]:65535"), { host: "::1", port: 65535 });
    assert.deepEqual(listenAddress("proxy.example:443"), { host: "proxy.example", port: 443 });
  });

  it("refuses a missing, non-numeric or out-of-range port and an unbracketed IPv6 address", () => {
    for (const bad of [
      "127.0.0.1",
      "127.0.0.1:",
      ":http",
      ":65536",
      ":123456",
      "::1:80",
      "[::1]",
      "[example]:80",
      "[::1",
    ]) {
      assert.equal(listenAddress(bad), undefined, bad);
    }
  });
});

describe("isLoopbackHost", () => {
  it("accepts localhost, 127.0.0.0/8, ::1 in any spelling, and 127.x mapped into IPv6", () => {
    for (const host of [
      "localhost",
      "LOCALHOST",
      "127.0.0.1",
      "127.1.2.3",
      "::1",
      "[::1]",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
      "[::ffff:127.0.0.9]",
    ]) {
      assert.equal(isLoopbackHost(host), true, host);
    }
  });

  it("refuses every other address and name, .localhost names and mapped non-loopback included", () => {
    for (const host of [
      "",
      "0.0.0.0",
      "10.0.0.1",
      "128.0.0.1",
      "::",
      "::2",
      "::ffff:10.0.0.1",
      "app.localhost",
      "localhost.example",
      "127.0.0.1.nip.io",
      "[::1",
    ]) {
      assert.equal(isLoopbackHost(host), false, host);
    }
  });
});
