import type { TLSSocket } from "node:tls";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { z } from "zod";
import { HmacError, verifyRequest } from "../../auth/hmac.ts";
import { withDeadline } from "../../core/async/index.ts";
import {
  backendError,
  type DeprovisionedBody,
  deprovisionRequestSchema,
  type HealthBody,
  LIMITS,
  leaseItemsSchema,
  leasePath,
  type MaintenanceRequest,
  MUTATIONS,
  type Mutation,
  mutationPath,
  PATHS,
  type ProvisionAcceptedBody,
  type ProvisionRequest,
  type ProvisionsPageBody,
  parseWith,
  provisionRequestSchema,
  QUERY,
  type RetentionsPageBody,
  reconcileCustomDomainRequestSchema,
  restartRequestSchema,
  SIGNATURE_HEADER,
  STORAGE_HEADER,
  type StatsBody,
  UNAUTHENTICATED_PATHS,
  UNHEALTHY,
  updateRequestSchema,
} from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import { parseStrictJson } from "../../core/encoding.ts";
import { FredError, isFredError } from "../../core/errors.ts";
import { isCanonicalUuid, isLeaseUuid } from "../../core/uuid.ts";
import type { Logger } from "../../log.ts";
import { type ContractHttpsOptions, peerNames, tlsServerOptions } from "./client-tls.ts";
import { failedAttemptEntries, tailDiagnosticLogs } from "./diagnostics.ts";
import type { BackendEngine } from "./engine.ts";
import {
  badRequest,
  ContractError,
  notFound,
  notRetained,
  storageMismatch,
  substrateTimeout,
  unsupported,
  WireError,
} from "./errors.ts";
import { registerExecRoute } from "./exec-route.ts";
import { followRequested, LogFollows } from "./log-follow.ts";
import type { KitMetrics } from "./metrics.ts";
import { admitRestore, isListed, type Retention, retainedInfo, retentionsPage } from "./retention/index.ts";
import type { LeaseItem, Substrate } from "./substrate.ts";
import { usagePage } from "./usage/page.ts";
import type { UsageSampler } from "./usage/sampler.ts";
import { diagnosticInfo, provisionInfo, releaseInfo, statsInfo } from "./views.ts";

/**
 * The backend contract over HTTP (fastify). The HMAC is checked on the raw body bytes
 * before anything parses them, so a tampered request is always a 401. Every response
 * carries exactly one X-Fred-Backend-Storage-ID. Errors are mapped to the backend
 * envelope here and nowhere else. Request bodies are read with the contract's readers
 * (src/core/backend-contract), turned into checked values by the readers at the end of
 * this file; every refusal there is a `WireError` (400) with a message safe to show the caller.
 */
export interface ContractServerOptions {
  engine: BackendEngine;
  substrate: Substrate;
  metrics: KitMetrics;
  logger: Logger;
  /** Current key first, then an optional verify-only previous key. */
  secrets: readonly Buffer[];
  clock: Clock;
  bodyLimitBytes: number;
  readTimeoutMs: number;
  idleTimeoutMs: number;
  https?: ContractHttpsOptions;
  /** The registry allowlist admission applies (reported by GET /stats); undefined: none. */
  allowedRegistries?: readonly string[] | undefined;
  /** Retention and restore (absent: /retentions is empty and /restore a bare 422). */
  retention?: Retention | undefined;
  /** Restore admission reads the same config as provision admission. */
  admission?: Parameters<typeof admitRestore>[0];
  /** The usage sampler (absent: the substrate cannot sample, GET /usage is 501). */
  usage?: UsageSampler | undefined;
  /** Registers a backend kind's own routes after the contract's (same hooks: signed, enveloped). */
  routes?: (app: FastifyInstance, engine: BackendEngine) => void;
}

/** How long GET /health waits for the substrate's verdict. */
const HEALTH_TIMEOUT_MS = 3_000;
/** How long a route waits on the substrate (connection info, logs, custom domains). */
const SUBSTRATE_CALL_MS = 30_000;

export function buildContractServer(o: ContractServerOptions): FastifyInstance {
  const { engine, substrate } = o;
  const journal = engine.journal;
  const storageId = journal.storageId;
  // Fastify's own request logging stays off: URLs of callbacks must never reach logs.
  const log = o.logger.child({ component: "contract-server" });
  // A substrate call past its budget answers 500 like any substrate failure; the log says which.
  const bounded = <T>(what: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> =>
    withDeadline(
      o.clock,
      SUBSTRATE_CALL_MS,
      undefined,
      () => substrateTimeout(what, SUBSTRATE_CALL_MS),
      work,
    );
  const app = Fastify({
    bodyLimit: o.bodyLimitBytes,
    requestTimeout: o.readTimeoutMs,
    keepAliveTimeout: o.idleTimeoutMs,
    ...(o.https ? { https: tlsServerOptions(o.https) } : {}),
  }) as unknown as FastifyInstance;

  // Bodies stay raw bytes until the signature over them has been checked.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));

  // Callback-style hooks: an async hook costs a promise and a microtask turn per request.
  app.addHook("onSend", (_req, reply, payload, done) => {
    reply.header(STORAGE_HEADER, storageId);
    done(null, payload);
  });

  if (o.https?.clientCa !== undefined) {
    // Refused handshakes never become requests; say why at debug level for the operator.
    app.server.on("tlsClientError", (err: NodeJS.ErrnoException, socket: TLSSocket) => {
      log.debug({ err_code: err.code, remote_address: socket.remoteAddress }, "TLS handshake refused");
      socket.destroy();
    });
  }

  const allowedNames = o.https?.clientAllowedNames;
  if (allowedNames !== undefined) {
    // Runs before the body is read and before the HMAC check: a peer whose certificate
    // names nobody we expect learns nothing else about the contract.
    const allowed = new Set(allowedNames);
    const verdicts = new WeakMap<object, { ok: boolean; names: string[] }>();
    app.addHook("onRequest", async (req) => {
      const socket = req.raw.socket as TLSSocket;
      let verdict = verdicts.get(socket);
      if (verdict === undefined) {
        const names = socket.authorized ? peerNames(socket) : [];
        verdict = { ok: names.some((n) => allowed.has(n)), names };
        verdicts.set(socket, verdict);
      }
      if (verdict.ok) return;
      log.warn(
        { peer_names: verdict.names, remote_address: socket.remoteAddress, method: req.method },
        "client certificate names none of the allowed names",
      );
      throw new ContractError(403, "client certificate is not allowed", {
        code: "client_certificate_not_allowed",
      });
    });
  }

  const authenticate = (req: FastifyRequest): void => {
    const q = req.url.indexOf("?");
    if (UNAUTHENTICATED_PATHS.has(q < 0 ? req.url : req.url.slice(0, q))) return;
    const body = req.body instanceof Buffer ? req.body : undefined;
    verifyRequest({
      header: req.headers[SIGNATURE_HEADER] as string | undefined,
      method: req.method,
      uri: req.raw.url ?? req.url,
      body,
      nowMs: o.clock.now(),
      secrets: o.secrets,
    });
    const sidQuery = (req.query as Record<string, unknown>)[QUERY.storageId];
    if (sidQuery !== undefined && (Array.isArray(sidQuery) || sidQuery !== storageId))
      throw storageMismatch();
    const sid = (req.params as Record<string, unknown> | undefined)?.storageId;
    if (sid !== undefined && sid !== storageId) throw storageMismatch();
  };
  app.addHook("preHandler", (req, _reply, done) => {
    try {
      authenticate(req);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  });

  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof ContractError) return reply.code(err.status).send(err.body);
    if (err instanceof HmacError) {
      const msg = err.code === "ERR_HMAC_MISSING" ? "missing signature" : "invalid signature";
      return reply.code(401).send(backendError(msg));
    }
    if (err instanceof WireError) return reply.code(400).send(backendError(err.message));
    if (isFredError(err) && err.code.startsWith("ERR_JSON"))
      return reply.code(400).send(backendError(err.message));
    const status = (err as { statusCode?: number }).statusCode;
    if (typeof status === "number" && status >= 400 && status < 500) {
      return reply.code(status).send(backendError(status === 413 ? "request body too large" : "bad request"));
    }
    log.error({ err, method: req.method }, "request failed");
    return reply.code(500).send(backendError("internal error"));
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send(backendError("not found")));

  const json = (req: FastifyRequest): unknown => {
    const body = req.body instanceof Buffer ? req.body : Buffer.alloc(0);
    if (body.length === 0) throw badRequest("request body must be a JSON object");
    return parseStrictJson(body, o.bodyLimitBytes);
  };

  // A substrate without the operation answers 501 whatever the body says.
  const maintenance = async (kind: "restart" | "update", req: FastifyRequest, reply: FastifyReply) => {
    if (substrate[kind] === undefined) throw unsupported(kind);
    const answer = await engine.maintenance.command(parseMaintenanceRequest(kind, json(req)));
    return reply.code(202).send(answer);
  };
  const handlers: Record<Mutation, (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>> = {
    provision: async (req, reply) => {
      try {
        const { operationId } = await engine.provision(parseProvisionRequest(json(req)));
        o.metrics.provisionsAdmitted.inc();
        return reply.code(202).send({ provision_id: operationId } satisfies ProvisionAcceptedBody);
      } catch (err) {
        const status = err instanceof ContractError ? err.status : err instanceof WireError ? 400 : 500;
        o.metrics.provisionsRefused.inc({ status: String(status) });
        throw err;
      }
    },
    deprovision: async (req, reply) => {
      await engine.deprovision(parseDeprovisionRequest(json(req)).leaseUuid);
      return reply.code(200).send({ status: "ok" } satisfies DeprovisionedBody);
    },
    reconcile_custom_domain: async (req, reply) => {
      const { leaseUuid, items } = parseReconcileCustomDomainRequest(json(req));
      // Applied before answering, so 204 means "in effect"; a lease this backend does not
      // run has nothing to change. The journal keeps them (durably, before the 204) so a
      // restart routes them again, and /provisions reports them: providerd's sweep sends
      // this only while they differ from the chain's. So a substrate that fails to apply
      // them gets the journal's previous domains back, and the next sweep retries.
      const before = journal.getLease(leaseUuid)?.items;
      const apply = substrate.reconcileCustomDomains?.bind(substrate);
      if (before !== undefined) {
        if (journal.setCustomDomains(leaseUuid, items)) await journal.durable();
        try {
          if (apply !== undefined) await bounded("custom domains", (s) => apply(leaseUuid, items, s));
        } catch (err) {
          if (journal.setCustomDomains(leaseUuid, before)) await journal.durable();
          throw err;
        }
      }
      return reply.code(204).send();
    },
    restart: (req, reply) => maintenance("restart", req, reply),
    update: (req, reply) => maintenance("update", req, reply),
    restore: async (req, reply) => {
      const { retention, admission } = o;
      if (retention === undefined || admission === undefined || !retention.capable) throw notRetained();
      const admitted = admitRestore(admission, retention, json(req));
      // The 202 promises a durable intent (and a durable claim on the source).
      await journal.durable();
      if (admitted.kind === "admitted") engine.startOperation(admitted.lease);
      return reply.code(202).send({ status: "restoring" });
    },
  };
  for (const op of MUTATIONS) {
    app.post(mutationPath(op), handlers[op]);
    app.post(mutationPath(op, ":storageId"), handlers[op]);
  }

  const leaseParam = (req: FastifyRequest): string => {
    try {
      return parseLeaseUuid((req.params as { uuid: string }).uuid);
    } catch (err) {
      throw badRequest((err as Error).message);
    }
  };
  const liveLease = (req: FastifyRequest) => {
    const lease = journal.getLease(leaseParam(req));
    if (!lease) throw notFound();
    return lease;
  };

  // Unauthenticated: the answer is a fixed word per failing part; the detail (engine or
  // SQLite text) goes to the operator's log only.
  app.get(PATHS.health, async (_req, reply) => {
    const problem = !journal.db.open
      ? { part: "journal" as const, err: new Error("journal is closed") }
      : journal.writeFailure !== undefined
        ? { part: "journal" as const, err: journal.writeFailure }
        : await substrateProblem(substrate, o.clock);
    if (problem === undefined) return reply.send({ status: "healthy" } satisfies HealthBody);
    log.warn({ err: problem.err, part: problem.part }, "health check: unhealthy");
    return reply.code(503).send(UNHEALTHY[problem.part]);
  });
  app.get(PATHS.stats, async (): Promise<StatsBody> => statsInfo(engine.pool.stats(), o.allowedRegistries));
  app.get(PATHS.metrics, async (_req, reply) =>
    reply.type(o.metrics.registry.contentType).send(await o.metrics.registry.metrics()),
  );

  app.get(leasePath("info", ":uuid"), async (req, reply) => {
    const lease = liveLease(req);
    if (lease.status !== "ready") throw notFound("lease is not ready");
    const info = await bounded("connection info", (s) => substrate.connection(lease.leaseUuid, s));
    if (info === undefined) throw notFound("lease is not ready");
    return reply.send(info);
  });
  // A lease no longer live (closed) still answers with its last failure while that is kept.
  app.get(leasePath("provisions", ":uuid"), async (req) => {
    const uuid = leaseParam(req);
    const lease = journal.getLease(uuid);
    if (lease) {
      const info = provisionInfo(lease);
      // A restore destination shows "restarting" until it is ready or failed (README seed).
      if (lease.head === "operation" && o.retention?.store.restoringInto(uuid)) info.status = "restarting";
      return info;
    }
    const retained = o.retention?.store.get(uuid);
    if (o.retention && isListed(retained)) return retainedInfo(retained, o.retention.policy);
    const failure = engine.diagnostic(uuid);
    if (!failure) throw notFound();
    return diagnosticInfo(failure);
  });
  app.get(leasePath("releases", ":uuid"), async (req) => {
    const lease = liveLease(req);
    return journal.releases(lease.leaseUuid).map(releaseInfo);
  });
  // Live containers first (with a rolled-back update's failed/ entries beside them); once
  // they are gone, the logs captured with the last failure.
  const follows = new LogFollows(app, {
    substrate,
    leaseExists: (uuid) => journal.getLease(uuid) !== undefined,
    storageId,
    clock: o.clock,
    logger: log,
  });
  app.get(leasePath("logs", ":uuid"), async (req, reply) => {
    const uuid = leaseParam(req);
    const mode = followRequested(req);
    if (mode === "bad") throw badRequest("follow must be true or false");
    const lease = journal.getLease(uuid);
    const failure = engine.diagnostic(uuid);
    if (!lease && !failure) throw notFound();
    const raw = (req.query as Record<string, unknown>)[QUERY.tail];
    let tail: number = LIMITS.defaultTail;
    if (raw !== undefined) {
      if (typeof raw !== "string" || !/^\d{1,9}$/.test(raw))
        throw badRequest("tail must be a non-negative integer");
      tail = Math.min(Number(raw), LIMITS.maxTail);
    }
    // The streaming read (log-follow.ts): the live workload's lines, held open.
    if (mode === "follow") return follows.serve(req, reply, uuid, tail);
    if (lease) {
      const live = await bounded("logs", (s) => substrate.logs(lease.leaseUuid, tail, s));
      if (Object.keys(live).length > 0 || failure?.logs === undefined)
        return { ...live, ...failedAttemptEntries(failure?.logs, tail) };
    }
    return tailDiagnosticLogs(failure?.logs ?? {}, tail);
  });
  // Answered from the sampler's memory, never by waiting on the substrate. A lease known
  // here whose instances were not sampled yet (still starting) answers with empty lists.
  app.get(leasePath("usage", ":uuid"), async (req) => {
    if (o.usage === undefined) throw unsupported("usage");
    return o.usage.read(liveLease(req).leaseUuid);
  });
  app.get(PATHS.usage, async (req) => {
    if (o.usage === undefined) throw unsupported("usage");
    return usagePage(o.usage, req.query as Record<string, unknown>);
  });
  app.get(
    PATHS.retentions,
    async (req): Promise<RetentionsPageBody> =>
      o.retention
        ? retentionsPage(o.retention.store, req.query as Record<string, unknown>)
        : { retentions: [] },
  );
  app.get(PATHS.provisions, async (req): Promise<ProvisionsPageBody> => {
    const q = req.query as Record<string, unknown>;
    const filter = q[QUERY.leaseUuid];
    if (filter !== undefined) {
      const ids = (Array.isArray(filter) ? filter : [filter]) as unknown[];
      if (ids.length > LIMITS.maxPage) throw badRequest(`at most ${LIMITS.maxPage} lease_uuid filters`);
      for (const id of ids)
        if (!isLeaseUuid(id)) throw badRequest("lease_uuid must be a canonical lowercase non-nil UUID");
      const rows = [...new Set(ids as string[])].sort().flatMap((id) => {
        const lease = journal.getLease(id);
        return lease ? [provisionInfo(lease)] : [];
      });
      return { provisions: rows };
    }
    let limit: number | undefined;
    const rawLimit = q[QUERY.limit];
    if (rawLimit !== undefined) {
      if (typeof rawLimit !== "string" || !/^\d{1,9}$/.test(rawLimit) || Number(rawLimit) < 1) {
        throw badRequest("limit must be a positive integer");
      }
      limit = Math.min(Number(rawLimit), LIMITS.maxPage);
    }
    let after: string | undefined;
    const cursor = q[QUERY.continue];
    if (cursor !== undefined) {
      if (limit === undefined) throw badRequest("continue requires a positive limit");
      if (!isCanonicalUuid(cursor)) throw badRequest("continue must be a lease UUID");
      after = cursor;
    }
    const rows = journal.listLeases(after, limit);
    const out: ProvisionsPageBody = { provisions: rows.map(provisionInfo) };
    const last = rows[rows.length - 1];
    if (limit !== undefined && rows.length === limit && last !== undefined) out.continue = last.leaseUuid;
    return out;
  });

  registerExecRoute(app, { journal, substrate, logger: o.logger, storageId });
  o.routes?.(app, engine);
  return app;
}

/** The substrate's own health verdict, bounded in time: a hung engine is unhealthy too. */
async function substrateProblem(
  substrate: Substrate,
  clock: Clock,
): Promise<{ part: "substrate"; err: unknown } | undefined> {
  const health = substrate.health?.bind(substrate);
  if (health === undefined) return undefined;
  const timedOut = () =>
    new FredError("ERR_SUBSTRATE_HEALTH_TIMEOUT", `no health verdict within ${HEALTH_TIMEOUT_MS} ms`, {
      retryable: true,
    });
  try {
    const problem = await withDeadline(clock, HEALTH_TIMEOUT_MS, undefined, timedOut, health);
    return problem === undefined ? undefined : { part: "substrate", err: new Error(problem) };
  } catch (err) {
    return { part: "substrate", err };
  }
}

// The kit's side of the contract's request bodies.

function read<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = parseWith(schema, input);
  if (!parsed.ok) throw new WireError(parsed.problem);
  return parsed.value;
}

/** A lease UUID from a path parameter, with the body field's messages. */
export function parseLeaseUuid(value: unknown): string {
  return read(deprovisionRequestSchema, { lease_uuid: value }).lease_uuid;
}

const itemsOnly = z.object({ items: leaseItemsSchema });

/** Lease items on their own, with the body field's messages (`items[0].sku …`). */
export function parseItems(value: unknown): LeaseItem[] {
  return read(itemsOnly, { items: value }).items;
}

export function parseProvisionRequest(body: unknown): ProvisionRequest {
  return read(provisionRequestSchema, body);
}

export function parseDeprovisionRequest(body: unknown): { leaseUuid: string } {
  return { leaseUuid: read(deprovisionRequestSchema, body).lease_uuid };
}

export function parseMaintenanceRequest(kind: MaintenanceRequest["kind"], body: unknown): MaintenanceRequest {
  return read(kind === "restart" ? restartRequestSchema : updateRequestSchema, body);
}

export function parseReconcileCustomDomainRequest(body: unknown): { leaseUuid: string; items: LeaseItem[] } {
  const o = read(reconcileCustomDomainRequestSchema, body);
  return { leaseUuid: o.lease_uuid, items: o.items };
}
