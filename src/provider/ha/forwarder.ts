import type { ClientRequest, IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { HOP_BY_HOP } from "../http/hop-by-hop.ts";
import type { ListenerOptions } from "../http/listener.ts";
import type { InboxSender } from "./inbox.ts";
import type { LeaderState } from "./leadership.ts";

// The builtins by getBuiltinModule, as elsewhere in providerd (see reconciler/control.ts).
const http = process.getBuiltinModule("node:http");
const https = process.getBuiltinModule("node:https");

/**
 * How a standby sends what it receives on to the leader (ha/standby.ts serves it), and why
 * a takeover does not show: while no leader serves (the lease names none, its holder no
 * longer accepts connections, or this instance won it and its daemon is starting), a
 * request waits here, up to `holdMs` (by then a new leader serves, if any can), and
 * goes to the new leader once there is one. Nothing that could act twice is sent twice: a
 * request is held when it never reached the old leader (its connection failed before a
 * byte was sent), or when it is idempotent and bodiless (a read, an upgrade) and the old
 * leader went away before answering. One with a body that the leader took and then died
 * on, one that waited too long, and one of more than MAX_HELD waiting at once are answered
 * 503 with Retry-After, which tenant tools and backends already retry.
 *
 * A request (not an upgrade) whose connection to the leader fails is journaled in
 * PostgreSQL instead (ha/inbox.ts), when `inbox` is given: whichever instance leads, now
 * or after the takeover, serves it from there, so a standby cut off from the leader's
 * address but not from the database still has its writes carried out.
 */
export interface ForwardingSources {
  instance: string;
  leadership: () => LeaderState;
  /** Where the leader serves (undefined: none live). */
  leaderAddress: () => string | undefined;
  /** A forward to a leader that does not answer is given up after both. */
  listener: Pick<ListenerOptions, "readTimeoutMs" | "writeTimeoutMs">;
  /** How long a request may wait for a leader that serves (the leader lease's TTL + two renewals). */
  holdMs: number;
  /** Where requests the leader's address refuses are journaled (absent: they wait for a leader that connects). */
  inbox?: InboxSender;
  clock: Clock;
  logger: Logger;
}

/** Requests waiting for a leader at once, at most; more are answered 503 at once. */
export const MAX_HELD = 1_024;
/** How often a waiting request looks again at who leads. */
const HOLD_POLL_MS = 100;
/** A leader whose connection failed is tried again this often while the lease still names it. */
const RETRY_SAME_LEADER_MS = 1_000;
/** A connection to the leader not made by then counts as failed (a machine gone answers no SYN). */
const CONNECT_TIMEOUT_MS = 2_000;
/** Methods a leader that went away before answering may be sent again (RFC 9110 §9.2.2), when bodyless. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS"]);
/** Marks a forwarded request, so an instance never forwards one again (no loops between instances). */
const FORWARDED_BY = "x-fred-forwarded-by";

/**
 * Sends a standby's requests on to the leader, holding those that arrive while no leader
 * serves (see the module's comment). `handOver()` is called once this instance's own
 * daemon serves: a request still held then goes to it.
 */
export class Forwarder {
  readonly #s: ForwardingSources;
  #held = 0;
  #daemonServes = false;
  /** Repeatable requests sent and not answered yet: how to abandon each, and under which leadership it was sent. */
  readonly #unanswered = new Map<() => void, string>();
  #watching = false;

  constructor(s: ForwardingSources) {
    this.#s = s;
  }

  handOver(): void {
    this.#daemonServes = true;
  }

  /** An HTTP request: the leader's answer, or 503. */
  request(req: IncomingMessage, res: ServerResponse): void {
    const inbox = this.#s.inbox;
    void this.#reach(
      req,
      () => res.destroyed,
      (target) => this.#sendRequest(req, res, target),
      inbox === undefined ? undefined : (takeBy) => relayThrough(inbox, req, res, takeBy),
    ).then((sent) => {
      if (sent) return;
      req.resume();
      refuse(res);
    });
  }

  /** A WebSocket upgrade: the leader's 101 and then bytes both ways, its refusal, or 503. */
  upgrade(req: IncomingMessage, client: Duplex, head: Buffer): void {
    client.on("error", () => client.destroy());
    void this.#reach(
      req,
      () => client.destroyed,
      (target) => this.#sendUpgrade(req, client, head, target),
    ).then((sent) => {
      if (!sent) refuseUpgrade(client);
    });
  }

  /** Who serves now, as far as this instance knows: changes at every change of leader. */
  #who(): string {
    const state = this.#s.leadership();
    return `${state.leader}/${state.generation}/${this.#daemonServes}`;
  }

  /**
   * Watches a repeatable request until its answer begins: if the leadership changes first
   * (the leader froze or was cut off, and another took over), it is abandoned and goes to
   * the new leader. One timer for all of them, running only while there are some.
   */
  #watchUnanswered(abandon: () => void): () => void {
    this.#unanswered.set(abandon, this.#who());
    if (!this.#watching) {
      this.#watching = true;
      const look = () => {
        const now = this.#who();
        for (const [give, sentUnder] of this.#unanswered) {
          if (sentUnder === now) continue;
          this.#unanswered.delete(give);
          give();
        }
        if (this.#unanswered.size > 0) this.#s.clock.setTimer(HOLD_POLL_MS, look);
        else this.#watching = false;
      };
      this.#s.clock.setTimer(HOLD_POLL_MS, look);
    }
    return () => this.#unanswered.delete(abandon);
  }

  /** The leader's origin, or undefined while none serves. */
  #upstream(): URL | undefined {
    // This instance leads: its daemon is starting (nobody serves yet), or serves now.
    if (this.#s.leadership().leader === this.#s.instance && !this.#daemonServes) return undefined;
    const address = this.#s.leaderAddress();
    return address === undefined ? undefined : new URL(address);
  }

  /**
   * Tries `send` until a connection to a leader is made (true), or gives up (false): the
   * request was forwarded once already (no loops), the client left, the hold ran out, or
   * too many wait. A leader whose connection failed is tried again once the lease names
   * another instance or a new generation, or RETRY_SAME_LEADER_MS later; or, with
   * `relay`, the request is journaled for the leader at once (true once answered).
   */
  async #reach(
    req: IncomingMessage,
    clientGone: () => boolean,
    send: (target: URL) => Promise<"sent" | "unreachable">,
    relay?: (takeBy: number) => Promise<void>,
  ): Promise<boolean> {
    const s = this.#s;
    // Forwarded here by another instance: never sent on again (no loops between instances),
    // but held for this instance's own daemon when it has just won the lease.
    const forwarded = req.headers[FORWARDED_BY] !== undefined;
    const ownDaemon = () => s.leadership().leader === s.instance;
    const deadline = s.clock.now() + s.holdMs;
    let failed: { who: string; at: number } | undefined;
    let holding = false;
    try {
      for (;;) {
        if (forwarded && !ownDaemon()) return false;
        const target = this.#upstream();
        const retry =
          failed === undefined ||
          failed.who !== this.#who() ||
          s.clock.now() - failed.at >= RETRY_SAME_LEADER_MS;
        if (target !== undefined && retry) {
          if ((await send(target)) === "sent") return true;
          failed = { who: this.#who(), at: s.clock.now() };
          // Cut off from the leader's address (or it died): journaled for whoever leads.
          if (relay !== undefined && !forwarded) {
            if (!holding) {
              if (this.#held >= MAX_HELD) return false;
              this.#held++;
              holding = true;
            }
            await relay(deadline);
            return true;
          }
        }
        if (clientGone() || s.clock.now() >= deadline) return false;
        if (!holding) {
          if (this.#held >= MAX_HELD) return false;
          this.#held++;
          holding = true;
        }
        await s.clock.sleep(HOLD_POLL_MS);
      }
    } finally {
      if (holding) this.#held--;
    }
  }

  /**
   * Where one attempt at the leader stands. `outcome` is "unreachable" when the attempt
   * failed with nothing lost by trying again: the connection failed before anything was
   * sent (the body flows only once connected, in `connected`), or, for a `repeatable`
   * request (idempotent, no body: RFC 9110 §9.2.2), the leader went away before it began
   * its answer. Otherwise it is "sent" (call `answered()` when the answer begins), and a
   * later failure goes to `lost`: the leader may have acted on the request.
   */
  #connect(
    out: ClientRequest,
    o: { repeatable: boolean; connected: () => void; lost: () => void },
  ): { outcome: Promise<"sent" | "unreachable">; answered: () => void } {
    let settle: (outcome: "sent" | "unreachable") => void = () => {};
    const outcome = new Promise<"sent" | "unreachable">((resolve) => {
      settle = resolve;
    });
    let settled = false;
    const unwatch = o.repeatable
      ? this.#watchUnanswered(() => out.destroy(new Error("another instance leads now")))
      : () => {};
    const answered = () => {
      unwatch();
      if (settled) return;
      settled = true;
      settle("sent");
    };
    const made = () => {
      if (!o.repeatable) answered();
      o.connected();
    };
    out.once("socket", (socket: Socket) => {
      if (!socket.connecting) return made();
      const cancel = this.#s.clock.setTimer(CONNECT_TIMEOUT_MS, () =>
        out.destroy(new Error("no connection to the leader in time")),
      );
      socket.once("connect", () => {
        cancel();
        made();
      });
      socket.once("close", cancel);
    });
    out.on("error", (err) => {
      if (settled) {
        this.#s.logger.debug({ err: err.message }, "standby: the leader went away with a request");
        return o.lost();
      }
      this.#s.logger.debug({ err: err.message }, "standby: the leader is unreachable");
      unwatch();
      settled = true;
      settle("unreachable");
    });
    return { outcome, answered };
  }

  #sendRequest(req: IncomingMessage, res: ServerResponse, target: URL): Promise<"sent" | "unreachable"> {
    const s = this.#s;
    const client = target.protocol === "https:" ? https : http;
    const out = client.request(
      {
        protocol: target.protocol,
        hostname: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: forwardedHeaders(req, s),
      },
      (answer) => {
        attempt.answered();
        const headers: IncomingHttpHeaders = {};
        for (const [name, value] of Object.entries(answer.headers))
          if (!HOP_BY_HOP.has(name)) headers[name] = value;
        res.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(res);
      },
    );
    // A leader that stopped answering (frozen, partitioned) gets what a client would give it.
    out.setTimeout(s.listener.readTimeoutMs + s.listener.writeTimeoutMs, () =>
      out.destroy(new Error("the leader did not answer in time")),
    );
    const bodyless =
      req.headers["transfer-encoding"] === undefined && Number(req.headers["content-length"] ?? 0) === 0;
    const attempt = this.#connect(out, {
      repeatable: bodyless && IDEMPOTENT.has(req.method ?? ""),
      connected: () => {
        res.on("close", () => {
          if (!res.writableFinished) out.destroy();
        });
        if (bodyless) out.end();
        else req.pipe(out);
      },
      lost: () => refuse(res),
    });
    return attempt.outcome;
  }

  #sendUpgrade(
    req: IncomingMessage,
    client: Duplex,
    head: Buffer,
    target: URL,
  ): Promise<"sent" | "unreachable"> {
    const headers = forwardedHeaders(req, this.#s);
    headers.connection = "Upgrade";
    headers.upgrade = req.headers.upgrade;
    const lib = target.protocol === "https:" ? https : http;
    const out = lib.request({
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers,
    });
    out.on("upgrade", (answer, leader, leaderHead) => {
      attempt.answered();
      const lines = [`HTTP/1.1 ${answer.statusCode} ${answer.statusMessage}`];
      for (let i = 0; i < answer.rawHeaders.length; i += 2)
        lines.push(`${answer.rawHeaders[i]}: ${answer.rawHeaders[i + 1]}`);
      client.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (leaderHead.length > 0) client.write(leaderHead);
      if (head.length > 0) leader.write(head);
      leader.pipe(client).pipe(leader);
      const end = () => {
        leader.destroy();
        client.destroy();
      };
      leader.on("error", end);
      client.on("error", end);
      leader.on("close", end);
      client.on("close", end);
    });
    // The leader answered without upgrading (a refusal: 401, 404, 409…): pass its answer on.
    out.on("response", (answer) => {
      attempt.answered();
      const lines = [`HTTP/1.1 ${answer.statusCode} ${answer.statusMessage}`];
      for (let i = 0; i < answer.rawHeaders.length; i += 2) {
        const name = answer.rawHeaders[i]!;
        if (!HOP_BY_HOP.has(name.toLowerCase())) lines.push(`${name}: ${answer.rawHeaders[i + 1]}`);
      }
      lines.push("connection: close");
      client.write(`${lines.join("\r\n")}\r\n\r\n`);
      // Closed once the answer is out, whether or not the client closes its side.
      answer.on("data", (chunk: Buffer) => client.write(chunk));
      answer.on("close", () => (client as Socket).destroySoon());
    });
    // An upgrade is a GET without a body: tried again if the leader goes away before answering.
    const attempt = this.#connect(out, {
      repeatable: IDEMPOTENT.has(req.method ?? ""),
      connected: () => client.once("close", () => out.destroy()),
      lost: () => refuseUpgrade(client),
    });
    out.end();
    return attempt.outcome;
  }
}

/** Journals a request for the leader (ha/inbox.ts) and sends its answer back, or 503. */
async function relayThrough(
  inbox: InboxSender,
  req: IncomingMessage,
  res: ServerResponse,
  takeBy: number,
): Promise<void> {
  const answer = await inbox.relay(req, takeBy);
  if (answer === undefined) return refuse(res);
  if (res.destroyed) return;
  const headers: Record<string, string | string[] | number> = {};
  for (const [name, value] of Object.entries(answer.headers))
    if (value !== undefined && !HOP_BY_HOP.has(name) && name !== "content-length") headers[name] = value;
  headers["content-length"] = answer.body.length;
  res.writeHead(answer.status, headers).end(answer.body);
}

function forwardedHeaders(req: IncomingMessage, s: ForwardingSources): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
  const peer = req.socket.remoteAddress ?? "";
  const prior = req.headers["x-forwarded-for"];
  headers["x-forwarded-for"] = prior === undefined ? peer : `${String(prior)}, ${peer}`;
  headers[FORWARDED_BY] = s.instance;
  return headers;
}

const NO_LEADER = JSON.stringify({
  error: "no providerd instance leads right now; retry shortly",
  code: 503,
});

function refuse(res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (res.destroyed) return;
  res.writeHead(503, { "content-type": "application/json", "retry-after": "2" }).end(NO_LEADER);
}

/** An upgrade nobody can take now: 503, then the connection closes whatever the client does. */
function refuseUpgrade(client: Duplex): void {
  if (client.destroyed) return;
  client.write(
    `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 2\r\ncontent-length: ${NO_LEADER.length}\r\nconnection: close\r\n\r\n${NO_LEADER}`,
  );
  (client as Socket).destroySoon();
}
