import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { WebSocket, WebSocketServer } from "ws";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { MAX_HELD } from "../../../src/provider/ha/forwarder.ts";
import type { LeaderState } from "../../../src/provider/ha/leadership.ts";
import { type StandbyServer, type StandbySources, serveStandby } from "../../../src/provider/ha/standby.ts";
import { bindApiSocket } from "../../../src/provider/http/bind.ts";
import type { ListenerOptions } from "../../../src/provider/http/listener.ts";
import { TestPki } from "../../helpers/certs.ts";
import { until } from "../../support/index.ts";

/**
 * A standby's listener (ha/standby.ts, ha/forwarder.ts) over real sockets: what it answers
 * itself, and what it forwards to a leader (here an HTTP server that echoes what it
 * received, and accepts or refuses WebSocket upgrades).
 */
const INSTANCE = "3f0c2b7e-1d4a-4c5b-9e6f-7a8b9c0d1e2f";
const LEADER = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";

interface Echo {
  method: string;
  url: string;
  body: string;
  forwardedFor: string | undefined;
  forwardedBy: string | undefined;
  connection: string | undefined;
}

/** The standby's sources: the test's leader, state and switches, with `o` changed. */
function sources(o: Partial<StandbySources>): StandbySources {
  return {
    providerUuid: "0190f3a2-7c1e-7000-8000-0000000000aa",
    instance: INSTANCE,
    leadership: () => state,
    leaderAddress: () => address,
    leaseRead: () => leaseRead,
    databaseOk: async () => databaseOk,
    listener: listener(15_000),
    holdMs: 0,
    clock: systemClock,
    logger: createLogger("standby-test", "silent"),
    ...o,
  };
}

/** A plain-HTTP listener whose read and write timeouts are `timeoutMs` each. */
function listener(timeoutMs: number): ListenerOptions {
  return {
    maxRequestBodySize: 1_048_576,
    readTimeoutMs: timeoutMs,
    writeTimeoutMs: timeoutMs,
    idleTimeoutMs: 60_000,
    trustedProxies: [],
    rateLimit: { rps: 100, burst: 100 },
    corsOrigins: ["*"],
    tls: undefined,
  };
}

/** A read sent to `standby` is answered 503 with Retry-After; the standby is closed after. */
async function refusedThenClosed(standby: StandbyServer): Promise<void> {
  try {
    const res = await fetch(`${standby.url}/v1/provider`);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "2");
  } finally {
    await standby.close();
  }
}

let leader: Server;
let leaderUrl: string;
let standby: StandbyServer;
let address: string | undefined;
let databaseOk = true;
let leaseRead = true;
/** Requests the leader received (its upgrades aside). */
let leaderReceived = 0;
let state: LeaderState = { role: "standby", generation: undefined, leader: LEADER };

before(async () => {
  leader = createServer((req, res) => {
    leaderReceived++;
    let body = "";
    req.setEncoding("utf8").on("data", (d: string) => {
      body += d;
    });
    req.on("end", () => {
      const echo: Echo = {
        method: req.method ?? "",
        url: req.url ?? "",
        body,
        forwardedFor: req.headers["x-forwarded-for"] as string | undefined,
        forwardedBy: req.headers["x-fred-forwarded-by"] as string | undefined,
        connection: req.headers.connection,
      };
      res.writeHead(req.url === "/missing" ? 404 : 201, {
        "content-type": "application/json",
        "x-leader": "yes",
      });
      res.end(JSON.stringify(echo));
    });
  });
  const sockets = new WebSocketServer({ noServer: true });
  leader.on("upgrade", (req: IncomingMessage, socket, head) => {
    if (req.url?.startsWith("/refused")) {
      socket.end(
        'HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 35\r\n\r\n{"error":"unauthorized","code":401}',
      );
      return;
    }
    sockets.handleUpgrade(req, socket, head, (ws) =>
      ws.on("message", (m) => ws.send(`echo:${m.toString()}`)),
    );
  });
  await new Promise<void>((resolve) => leader.listen(0, "127.0.0.1", resolve));
  leaderUrl = `http://127.0.0.1:${(leader.address() as { port: number }).port}`;
  address = leaderUrl;
  standby = await serveStandby(await bindApiSocket("127.0.0.1:0", "http"), sources({}));
});

after(async () => {
  await standby?.close();
  leader?.closeAllConnections();
  leader?.close();
});

describe("a standby's own answers", () => {
  it("/health and /readyz say standby and name the leader; /metrics says it does not lead", async () => {
    for (const path of ["/health", "/readyz"]) {
      const res = await fetch(`${standby.url}${path}`);
      assert.equal(res.status, 200, path);
      const body = (await res.json()) as Record<string, unknown>;
      assert.equal(body.role, "standby");
      assert.equal(body.instance, INSTANCE);
      assert.equal(body.leader, LEADER);
      assert.equal(body.status, "healthy");
    }
    const metrics = await (await fetch(`${standby.url}/metrics`)).text();
    assert.match(metrics, /^fred_leader 0$/m);
    assert.match(metrics, /^fred_leader_generation 0$/m);
  });

  /** /readyz is 503 naming `check`'s `message` while `during` holds, and /health still answers. */
  async function notReady(check: string, message: string, during: (on: boolean) => void): Promise<void> {
    during(true);
    try {
      const ready = await fetch(`${standby.url}/readyz`);
      assert.equal(ready.status, 503);
      const report = (await ready.json()) as { checks: Record<string, { message: string }> };
      assert.equal(report.checks[check]?.message, message);
      assert.equal((await fetch(`${standby.url}/health`)).status, 200);
    } finally {
      during(false);
    }
  }

  it("is not ready until it has read the leader lease (it does not know who leads yet)", () =>
    notReady("leader_lease", "the leader lease has not been read yet", (on) => {
      leaseRead = !on;
    }));

  it("is not ready while the database does not answer (and /health still answers)", () =>
    notReady("database", "database unreachable", (on) => {
      databaseOk = !on;
    }));
});

describe("an instance that has just won the lease, while its daemon starts", () => {
  it("is not ready, and answers what it would forward 503 with Retry-After (nobody serves yet)", async () => {
    const before = state;
    state = { role: "leader", generation: 7, leader: INSTANCE };
    try {
      const ready = await fetch(`${standby.url}/readyz`);
      assert.equal(ready.status, 503);
      assert.equal(((await ready.json()) as { role: string }).role, "leader");
      assert.equal((await fetch(`${standby.url}/health`)).status, 200);
      const read = await fetch(`${standby.url}/v1/provider`);
      assert.equal(read.status, 503);
      assert.equal(read.headers.get("retry-after"), "2");
    } finally {
      state = before;
    }
  });
});

describe("what a standby forwards to the leader", () => {
  it("a request with its method, path, query and body; the leader's status, headers and body come back", async () => {
    const res = await fetch(`${standby.url}/v1/leases/abc/upload?x=1`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream", connection: "keep-alive" },
      body: "manifest bytes",
    });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get("x-leader"), "yes");
    const echo = (await res.json()) as Echo;
    assert.deepEqual(
      { method: echo.method, url: echo.url, body: echo.body, by: echo.forwardedBy },
      { method: "POST", url: "/v1/leases/abc/upload?x=1", body: "manifest bytes", by: INSTANCE },
    );
    assert.match(echo.forwardedFor ?? "", /127\.0\.0\.1/);
    const missing = await fetch(`${standby.url}/missing`);
    assert.equal(missing.status, 404, "a refusal of the leader is passed on as it is");
  });

  it("a WebSocket upgrade, both ways; an upgrade the leader refuses comes back refused", async () => {
    const wsUrl = standby.url.replace("http", "ws");
    const ws = new WebSocket(`${wsUrl}/v1/leases/abc/events`);
    const reply = await new Promise<string>((resolve, reject) => {
      ws.once("open", () => ws.send("ping"));
      ws.once("message", (m) => resolve(m.toString()));
      ws.once("error", reject);
    });
    assert.equal(reply, "echo:ping");
    ws.close();
    const refused = new WebSocket(`${wsUrl}/refused`);
    const status = await new Promise<number>((resolve) => {
      refused.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      refused.once("error", () => resolve(-1));
    });
    assert.equal(status, 401);
  });

  it("with no leader, with a leader that does not answer, or a request already forwarded once: 503 and Retry-After", async () => {
    const expectRefused = async (res: Response) => {
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("retry-after"), "2");
      assert.deepEqual(await res.json(), {
        error: "no providerd instance leads right now; retry shortly",
        code: 503,
      });
    };
    address = undefined;
    try {
      await expectRefused(
        await fetch(`${standby.url}/v1/provider`, { method: "POST", body: "x".repeat(10_000) }),
      );
      const ws = new WebSocket(`${standby.url.replace("http", "ws")}/v1/leases/abc/events`);
      const status = await new Promise<number>((resolve) => {
        ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.once("error", () => resolve(-1));
      });
      assert.equal(status, 503);
      address = "http://127.0.0.1:1"; // nothing listens there
      await expectRefused(await fetch(`${standby.url}/v1/provider`));
      address = leaderUrl;
      await expectRefused(
        await fetch(`${standby.url}/v1/provider`, { headers: { "x-fred-forwarded-by": "another-instance" } }),
      );
    } finally {
      address = leaderUrl;
    }
    assert.equal((await fetch(`${standby.url}/v1/provider`)).status, 201, "forwarding resumes");
  });
});

describe("a request that arrives while no leader serves (a takeover under way)", () => {
  let heldAddress: string | undefined;
  let heldState: LeaderState;
  /** A standby of its own that holds requests up to `holdMs`, with this block's switches. */
  const holding = async (holdMs: number) =>
    serveStandby(
      await bindApiSocket("127.0.0.1:0", "http"),
      sources({ holdMs, leaderAddress: () => heldAddress, leadership: () => heldState }),
    );
  /** `answer`, with a flag saying whether it has settled yet. */
  const watched = <T>(answer: Promise<T>) => {
    const w = { settled: false, answer };
    void answer.then(
      () => {
        w.settled = true;
      },
      () => {
        w.settled = true;
      },
    );
    return w;
  };
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** The takeover is over: the lease names the leader at `generation`, and it serves. */
  const aLeaderServes = (generation: number) => {
    heldState = { role: "standby", generation, leader: LEADER };
    heldAddress = leaderUrl;
  };

  it("waits, and goes (body, upgrade and all) to the next leader once the old one's address refuses it", async () => {
    heldAddress = "http://127.0.0.1:1"; // the old leader's: nothing listens there any more
    heldState = { role: "standby", generation: 4, leader: "old-leader" };
    const standby = await holding(20_000);
    const before = leaderReceived;
    try {
      const upload = watched(
        fetch(`${standby.url}/v1/leases/abc/upload`, { method: "POST", body: "manifest bytes" }),
      );
      const ws = new WebSocket(`${standby.url.replace("http", "ws")}/v1/leases/abc/events`);
      const reply = watched(
        new Promise<string>((resolve, reject) => {
          ws.once("open", () => ws.send("ping"));
          ws.once("message", (m) => resolve(m.toString()));
          ws.once("unexpected-response", (_req, res) => reject(new Error(`answered ${res.statusCode}`)));
          ws.once("error", reject);
        }),
      );
      await pause(400);
      assert.equal(upload.settled, false, "the upload waits for a leader instead of a 503");
      assert.equal(reply.settled, false, "so does the upgrade");
      aLeaderServes(5);
      const res = await upload.answer;
      assert.equal(res.status, 201);
      const echo = (await res.json()) as Echo;
      assert.deepEqual(
        { method: echo.method, body: echo.body, by: echo.forwardedBy },
        { method: "POST", body: "manifest bytes", by: INSTANCE },
      );
      assert.equal(await reply.answer, "echo:ping");
      ws.close();
      assert.equal(leaderReceived - before, 1, "the new leader received the upload once");
    } finally {
      await standby.close();
    }
  });

  it("an upload larger than the sockets' buffers waits too (its body unread), and arrives whole", async () => {
    heldAddress = undefined;
    heldState = { role: "standby", generation: undefined, leader: undefined };
    const standby = await holding(20_000);
    try {
      const body = "m".repeat(4 * 1024 * 1024);
      const upload = watched(fetch(`${standby.url}/v1/leases/abc/upload`, { method: "POST", body }));
      await pause(500);
      assert.equal(upload.settled, false, "the upload waits for a leader");
      aLeaderServes(7);
      const res = await upload.answer;
      assert.equal(res.status, 201);
      assert.equal(((await res.json()) as Echo).body.length, body.length);
    } finally {
      await standby.close();
    }
  });

  it("waits no longer than the hold: then 503 with Retry-After", async () => {
    heldAddress = undefined;
    heldState = { role: "standby", generation: undefined, leader: undefined };
    await refusedThenClosed(await holding(300));
  });

  it("while this instance has won the lease and its daemon starts, waits; then goes to its daemon", async () => {
    heldState = { role: "leader", generation: 9, leader: INSTANCE };
    heldAddress = leaderUrl; // this instance's own advertised address: its daemon, once it serves
    const standby = await holding(20_000);
    const read = watched(fetch(`${standby.url}/v1/provider`));
    // Another instance's standby sends this instance what it received: held here too.
    const forwarded = watched(
      fetch(`${standby.url}/v1/provider`, { headers: { "x-fred-forwarded-by": "another-instance" } }),
    );
    await pause(300);
    assert.equal(read.settled, false, "nobody serves yet: the read waits");
    assert.equal(forwarded.settled, false, "and so does the one another standby forwarded");
    await standby.close(); // the daemon serves now
    assert.equal((await read.answer).status, 201);
    assert.equal((await forwarded.answer).status, 201);
  });

  it("a request with a body the leader took before it died is not sent again: 503; a bodiless GET is, to the next leader", async () => {
    let taken = 0;
    const dying = (await import("node:net")).createServer((socket) => {
      socket.once("data", () => {
        taken++;
        socket.destroy();
      });
    });
    await new Promise<void>((resolve) => dying.listen(0, "127.0.0.1", resolve));
    heldAddress = `http://127.0.0.1:${(dying.address() as { port: number }).port}`;
    heldState = { role: "standby", generation: 5, leader: LEADER };
    const standby = await holding(20_000);
    try {
      const res = await fetch(`${standby.url}/v1/leases/abc/restart`, { method: "POST", body: "{}" });
      assert.equal(res.status, 503);
      assert.equal(taken, 1);
      // A read is safe to send again (RFC 9110's idempotent methods): it waits for the next leader.
      const read = watched(fetch(`${standby.url}/v1/leases/abc/status`));
      await until(() => taken === 2, "the dying leader took the read");
      await pause(200);
      assert.equal(read.settled, false, "the read waits instead of a 503");
      aLeaderServes(6);
      const answer = await read.answer;
      assert.equal(answer.status, 201);
      assert.equal(((await answer.json()) as Echo).url, "/v1/leases/abc/status");
    } finally {
      await standby.close();
      dying.close();
    }
  });

  it(`holds at most ${MAX_HELD} requests at once: more are answered 503 at once`, async () => {
    heldAddress = undefined;
    heldState = { role: "standby", generation: undefined, leader: undefined };
    const standby = await holding(60_000);
    const before = leaderReceived;
    try {
      const { request } = await import("node:http");
      const ask = () =>
        new Promise<number>((resolve, reject) => {
          const req = request(`${standby.url}/v1/provider`, { agent: false }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on("error", reject);
          req.end();
        });
      const asked = Array.from({ length: MAX_HELD + 5 }, () => watched(ask()));
      await until(() => asked.filter((a) => a.settled).length >= 5, "the requests past the bound answered");
      await pause(200);
      const early = asked.filter((a) => a.settled);
      assert.equal(early.length, 5, "only the requests past the bound are answered before a leader serves");
      for (const a of early) assert.equal(await a.answer, 503);
      aLeaderServes(6);
      const statuses = await Promise.all(asked.map((a) => a.answer));
      assert.equal(statuses.filter((st) => st === 201).length, MAX_HELD);
      assert.equal(leaderReceived - before, MAX_HELD);
    } finally {
      await standby.close();
    }
  });
});

describe("a leader that accepts connections but never answers (frozen)", () => {
  let frozen: import("node:net").Server;
  let frozenUrl: string;
  const held: import("node:net").Socket[] = [];
  before(async () => {
    frozen = (await import("node:net")).createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => frozen.listen(0, "127.0.0.1", resolve));
    frozenUrl = `http://127.0.0.1:${(frozen.address() as { port: number }).port}`;
  });
  after(() => {
    for (const socket of held) socket.destroy();
    frozen.close();
  });

  const quick = async (leaderAddress: string, readTimeoutMs: number) =>
    serveStandby(
      await bindApiSocket("127.0.0.1:0", "http"),
      sources({ leaderAddress: () => leaderAddress, listener: listener(readTimeoutMs) }),
    );

  it("a forwarded request is answered 503 once the listener's timeouts pass", async () => {
    await refusedThenClosed(await quick(frozenUrl, 150));
  });

  it("closing the standby (it is taking over) drops an upload still waiting on it; a read is answered 503", async () => {
    const standby = await quick(frozenUrl, 600_000);
    const before = held.length;
    const upload = fetch(`${standby.url}/v1/leases/abc/upload`, { method: "POST", body: "manifest" }).then(
      (res) => res.status,
      () => "dropped",
    );
    const read = fetch(`${standby.url}/v1/provider`).then(
      (res) => res.status,
      () => "dropped",
    );
    await until(() => held.length >= before + 2, "both requests reached the frozen leader");
    await standby.close(); // would wait for the frozen leader forever without forceCloseConnections
    assert.equal(await upload, "dropped");
    assert.equal(await read, 503, "a read is not waited for once the standby hands over (none was answered)");
  });

  it("a read waiting on a frozen leader goes to the next one once another instance leads", async () => {
    let leaderAddress = frozenUrl;
    let leadership: LeaderState = { role: "standby", generation: 3, leader: "frozen-leader" };
    const standby = await serveStandby(
      await bindApiSocket("127.0.0.1:0", "http"),
      sources({
        holdMs: 20_000,
        leaderAddress: () => leaderAddress,
        leadership: () => leadership,
        listener: listener(600_000),
      }),
    );
    try {
      const before = held.length;
      // Without the move it would wait for the frozen leader until the listener's timeouts.
      const read = fetch(`${standby.url}/v1/leases/abc/status`, { signal: AbortSignal.timeout(10_000) });
      await until(() => held.length > before, "the read reached the frozen leader");
      leadership = { role: "standby", generation: 4, leader: LEADER };
      leaderAddress = leaderUrl;
      const answer = await read;
      assert.equal(answer.status, 201);
      assert.equal(((await answer.json()) as Echo).url, "/v1/leases/abc/status");
    } finally {
      await standby.close();
    }
  });
});

describe("a standby over TLS", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-standby-tls-"));
  const pki = new TestPki(dir);
  const certFile = join(dir, "live.pem");
  const keyFile = join(dir, "live.key");
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** The certificate a new TLS connection to `port` is served (its serial number). */
  const servedSerial = (port: number) =>
    new Promise<string>((resolve, reject) => {
      const c = tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => {
        resolve(c.getPeerX509Certificate()?.serialNumber ?? "");
        c.end();
      });
      c.on("error", reject);
    });
  const serialOf = (name: string) => new X509Certificate(readFileSync(pki.file(`${name}.pem`))).serialNumber;
  const install = (name: string) => {
    // As an ACME client does: the new files renamed into place.
    copyFileSync(pki.file(`${name}.pem`), `${certFile}.new`);
    copyFileSync(pki.file(`${name}.key`), `${keyFile}.new`);
    renameSync(`${keyFile}.new`, keyFile);
    renameSync(`${certFile}.new`, certFile);
  };

  it("serves a renewed certificate: one renamed into place, and on SIGHUP's reloadTls", async () => {
    for (const name of ["first", "renewed", "again"])
      pki.selfSigned(name, "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1");
    install("first");
    const standby = await serveStandby(
      await bindApiSocket("127.0.0.1:0", "https"),
      sources({ listener: { ...listener(15_000), tls: { certFile, keyFile } } }),
    );
    try {
      const port = Number(new URL(standby.url).port);
      assert.equal(await servedSerial(port), serialOf("first"));
      install("renewed");
      await until(
        async () => (await servedSerial(port)) === serialOf("renewed"),
        "the renewed certificate served",
      );
      // SIGHUP: the pair is read again whatever the watcher saw.
      copyFileSync(pki.file("again.pem"), certFile);
      copyFileSync(pki.file("again.key"), keyFile);
      assert.equal(standby.reloadTls(), true);
      assert.equal(await servedSerial(port), serialOf("again"));
      // A half-written pair is refused and the certificate in service stays.
      writeFileSync(keyFile, "not a key");
      assert.equal(standby.reloadTls(), false);
      assert.equal(await servedSerial(port), serialOf("again"));
    } finally {
      await standby.close();
    }
  });
});
