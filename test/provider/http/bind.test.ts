import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Fastify, { type FastifyInstance } from "fastify";
import { bindApiSocket, bindSharedApiSocket } from "../../../src/provider/http/bind.ts";
import { TestPki } from "../../helpers/certs.ts";

/**
 * The API socket bound before the server is built (http/bind.ts): a connection that
 * arrives in between is answered once the server serves (plain and TLS), one still held
 * when the socket closes unserved is dropped, and an instance's shared address (ha/) is
 * served in turn by its standby and its daemon.
 */
const dir = mkdtempSync(join(tmpdir(), "fred-bind-"));
const pki = new TestPki(dir);

before(() => pki.selfSigned("api", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1"));
after(() => rmSync(dir, { recursive: true, force: true }));

function app(tls?: { cert: Buffer; key: Buffer }): FastifyInstance {
  const options: Record<string, unknown> = tls === undefined ? {} : { https: tls };
  const a = Fastify(options) as unknown as FastifyInstance;
  a.get("/ping", async () => ({ pong: true }));
  return a;
}

/** A raw HTTP/1.1 request written now; resolves with what the connection received until it closed. */
function rawRequest(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect(port, "127.0.0.1");
    let got = "";
    c.on("data", (d) => {
      got += d;
    });
    c.on("error", reject);
    c.on("close", () => resolve(got));
    c.write("GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  });
}

const portOf = (url: string) => Number(new URL(url).port);
const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

describe("bindApiSocket", () => {
  it("answers a request that arrived before the server served", async () => {
    const socket = await bindApiSocket("127.0.0.1:0", "http");
    const answer = rawRequest(portOf(socket.url));
    await settle(); // the connection is accepted and held meanwhile
    const server = app();
    await socket.serve(server);
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /\{"pong":true\}$/);
    await server.close();
  });

  it("answers a TLS handshake and request that arrived before the server served", async () => {
    const socket = await bindApiSocket("127.0.0.1:0", "https");
    const ca = readFileSync(pki.file("api.pem"));
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      httpsRequest({ host: "127.0.0.1", port: portOf(socket.url), path: "/ping", ca }, (res) => {
        let body = "";
        res.on("data", (d) => {
          body += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      })
        .on("error", reject)
        .end();
    });
    await settle();
    const server = app({ cert: ca, key: readFileSync(pki.file("api.key")) });
    await socket.serve(server);
    assert.deepEqual(await answer, { status: 200, body: '{"pong":true}' });
    await server.close();
  });

  it("drops the held connections and frees the port when closed unserved", async () => {
    const socket = await bindApiSocket("127.0.0.1:0", "http");
    const port = portOf(socket.url);
    const answer = rawRequest(port);
    await settle();
    await socket.close();
    assert.equal(await answer, "", "closed without an answer, not left hanging");
    const again = await bindApiSocket(`127.0.0.1:${port}`, "http");
    await again.close();
  });

  it("a shared address is served in turn: new connections go to whoever serves, and wait between turns", async () => {
    const shared = await bindSharedApiSocket("127.0.0.1:0", "http");
    const port = portOf(shared.url);
    const named = (name: string) => {
      const a = Fastify();
      a.get("/ping", async () => ({ pong: name }));
      return a as unknown as FastifyInstance;
    };
    const [first, second] = [named("standby"), named("daemon")];
    const firstTurn = shared.lend();
    await firstTurn.serve(first);
    assert.match(await rawRequest(port), /"pong":"standby"/);
    const secondTurn = shared.lend();
    await secondTurn.serve(second);
    await firstTurn.close(); // a turn already over: closing it changes nothing
    assert.match(await rawRequest(port), /"pong":"daemon"/);
    await secondTurn.close();
    const waiting = rawRequest(port);
    await settle(); // nobody serves: the connection is held, not refused
    const third = named("standby again");
    await shared.lend().serve(third);
    assert.match(await waiting, /"pong":"standby again"/);
    await assert.rejects(bindApiSocket(`127.0.0.1:${port}`, "http"), { code: "EADDRINUSE" });
    await shared.close();
    await Promise.all([first.close(), second.close(), third.close()]);
    const again = await bindApiSocket(`127.0.0.1:${port}`, "http");
    await again.close();
  });
});
