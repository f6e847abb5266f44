import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import { hmacSecret, verifyRequest } from "../../../src/auth/hmac.ts";

/**
 * A small real HTTP server speaking the backend contract's responses, with knobs for
 * the misbehaviours the client must survive: wrong/missing/duplicated storage-ID
 * headers, scripted statuses and bodies, held responses, oversized pages.
 */
export type HeaderMode = "ok" | "missing" | "duplicate" | "wrong";

export interface Scripted {
  status: number;
  body?: string | object;
  /** Response is held until this resolves (to test timeouts without sleeping). */
  hold?: Promise<void>;
}

export interface Recorded {
  method: string;
  url: string;
  body: string;
  signatureValid: boolean;
}

export interface FakeBackend {
  url: string;
  storageId: string;
  headerMode: HeaderMode;
  provisions: string[];
  retentions: string[];
  stats: object;
  /** Next responses by route key (provision, deprovision, provisions, retentions, stats, info); shifted per request. */
  script: Map<string, Scripted[]>;
  requests: Recorded[];
  /** Resolves when the next request arrives. */
  nextRequest(): Promise<Recorded>;
  close(): Promise<void>;
}

const WRONG_ID = "99999999-9999-4999-8999-999999999999";

export interface FakeTls {
  key: Buffer;
  cert: Buffer;
  /** CA that client certificates must chain to (mTLS). */
  ca: Buffer;
}

export async function startFakeBackend(opts: {
  storageId: string;
  secret: string;
  tls?: FakeTls;
}): Promise<FakeBackend> {
  const app: FastifyInstance = (
    opts.tls === undefined
      ? Fastify({ logger: false })
      : Fastify({
          logger: false,
          https: {
            key: opts.tls.key,
            cert: opts.tls.cert,
            ca: opts.tls.ca,
            requestCert: true,
            rejectUnauthorized: true,
          },
        })
  ) as FastifyInstance;
  const secret = hmacSecret(opts.secret);
  const waiters: ((r: Recorded) => void)[] = [];
  const fake: FakeBackend = {
    url: "",
    storageId: opts.storageId,
    headerMode: "ok",
    provisions: [],
    retentions: [],
    stats: { total_cpu_cores: 8, allocated_cpu_cores: 2, total_memory_mb: 1024, allocated_memory_mb: 0 },
    script: new Map(),
    requests: [],
    nextRequest: () => new Promise((resolve) => waiters.push(resolve)),
    close: () => app.close(),
  };

  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_req, body, done) => done(null, body));

  function record(
    method: string,
    url: string,
    body: Buffer | undefined,
    signature: string | undefined,
  ): void {
    let signatureValid = true;
    try {
      verifyRequest({ header: signature, method, uri: url, body, nowMs: Date.now(), secrets: [secret] });
    } catch {
      signatureValid = false;
    }
    const r: Recorded = { method, url, body: body?.toString() ?? "", signatureValid };
    fake.requests.push(r);
    for (const w of waiters.splice(0)) w(r);
  }

  function setStorageHeader(reply: FastifyReply): void {
    const h = "X-Fred-Backend-Storage-ID";
    if (fake.headerMode === "ok") reply.header(h, fake.storageId);
    else if (fake.headerMode === "wrong") reply.header(h, WRONG_ID);
    else if (fake.headerMode === "duplicate") reply.header(h, [fake.storageId, fake.storageId]);
  }

  async function answer(key: string, reply: FastifyReply, fallback: () => Scripted): Promise<void> {
    const next = fake.script.get(key)?.shift() ?? fallback();
    if (next.hold !== undefined) await next.hold;
    setStorageHeader(reply);
    reply.code(next.status);
    if (next.body === undefined) return reply.send();
    if (typeof next.body === "string") return reply.type("application/json").send(next.body);
    return reply.send(next.body);
  }

  function page(all: string[], query: Record<string, string>, wrap: (id: string) => object, key: string) {
    const sorted = [...all].sort();
    const limit = Number(query.limit ?? sorted.length);
    const start = query.continue === undefined ? 0 : sorted.findIndex((x) => x > query.continue!);
    const slice = start < 0 ? [] : sorted.slice(start, start + limit);
    const body: Record<string, unknown> = { [key]: slice.map(wrap) };
    if (slice.length === limit && start + limit < sorted.length) body.continue = slice[slice.length - 1];
    return body;
  }

  app.post("/_fred/storage/:sid/:op", async (req, reply) => {
    const { op } = req.params as { op: string };
    record("POST", req.url, req.body as Buffer, req.headers["x-fred-signature"] as string | undefined);
    const body = JSON.parse((req.body as Buffer).toString()) as { lease_uuid: string };
    return answer(op, reply, () =>
      op === "provision"
        ? { status: 202, body: { provision_id: body.lease_uuid } }
        : { status: 200, body: { status: "ok" } },
    );
  });
  app.get("/provisions", async (req, reply) => {
    record("GET", req.url, undefined, req.headers["x-fred-signature"] as string | undefined);
    const q = req.query as Record<string, string>;
    return answer("provisions", reply, () => ({
      status: 200,
      body: page(fake.provisions, q, (id) => ({ lease_uuid: id, status: "ready" }), "provisions"),
    }));
  });
  app.get("/retentions", async (req, reply) => {
    record("GET", req.url, undefined, req.headers["x-fred-signature"] as string | undefined);
    const q = req.query as Record<string, string>;
    return answer("retentions", reply, () => ({
      status: 200,
      body: page(fake.retentions, q, (id) => ({ lease_uuid: id }), "retentions"),
    }));
  });
  app.get("/stats", async (req, reply) => {
    record("GET", req.url, undefined, req.headers["x-fred-signature"] as string | undefined);
    return answer("stats", reply, () => ({ status: 200, body: fake.stats }));
  });
  app.get("/info/:id", async (req, reply) => {
    record("GET", req.url, undefined, req.headers["x-fred-signature"] as string | undefined);
    return answer("info", reply, () => ({ status: 404, body: { error: "lease not provisioned" } }));
  });

  for (const [route, key] of [
    ["/provisions/:id", "provision-info"],
    ["/logs/:id", "logs"],
    ["/releases/:id", "releases"],
    ["/health", "health"],
  ] as const) {
    app.get(route, async (req, reply) => {
      record("GET", req.url, undefined, req.headers["x-fred-signature"] as string | undefined);
      return answer(key, reply, () =>
        key === "health"
          ? { status: 200, body: { status: "healthy" } }
          : { status: 404, body: { error: "not found" } },
      );
    });
  }

  fake.url = await app.listen({ port: 0, host: "127.0.0.1" });
  return fake;
}
