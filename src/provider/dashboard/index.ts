import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import type { ProviderConfig } from "../config/index.ts";
import { type BoundApiSocket, bindApiSocket } from "../http/bind.ts";
import type { TlsFiles } from "../http/listener.ts";
import { OperatorAuth } from "./auth.ts";
import { DashboardContext, type DashboardContextOptions } from "./context.ts";
import { buildOperatorServer } from "./listener.ts";
import type { DashboardSources } from "./sources.ts";
import { findWebRoot } from "./static-files.ts";
import { ensureOperatorToken } from "./token.ts";

/**
 * The operator dashboard: providerd's second listener (operator_listen_addr), its page and
 * its read API. The composition root binds it early (`bindOperatorListener`: a taken port
 * or a refused token file stops the start before the chain is dialled) and serves it once
 * everything it reads exists (`serveDashboard`).
 */
export { DashboardActivity } from "./activity.ts";
export { DashboardContext } from "./context.ts";
export type { DashboardSources } from "./sources.ts";
export { ensureOperatorToken, readOperatorToken } from "./token.ts";

export interface OperatorEndpoint {
  socket: BoundApiSocket;
  /** The URL the listener answers on (the bound port, 0 resolved). */
  url: string;
  token: string;
  tls: TlsFiles | undefined;
}

export function operatorTls(config: ProviderConfig): TlsFiles | undefined {
  if (config.operatorTlsCertFile === "") return undefined;
  return {
    certFile: config.operatorTlsCertFile,
    keyFile: config.operatorTlsKeyFile,
    ...(config.operatorClientCaFile === "" ? {} : { caFile: config.operatorClientCaFile }),
    keys: { cert: "operator_tls_cert_file", key: "operator_tls_key_file", ca: "operator_client_ca_file" },
  };
}

/** Reads (or makes) the token and binds the port; undefined when operator_listen_addr is "". */
export async function bindOperatorListener(
  config: ProviderConfig,
  logger: Logger,
): Promise<OperatorEndpoint | undefined> {
  if (config.operatorListenAddr === "") return undefined;
  const token = ensureOperatorToken(config.operatorTokenFile);
  if (token.created) logger.info({ path: token.path }, "operator token created (mode 0600)");
  const tls = operatorTls(config);
  let socket: BoundApiSocket;
  try {
    socket = await bindApiSocket(config.operatorListenAddr, tls === undefined ? "http" : "https");
  } catch (err) {
    throw new FredError(
      "ERR_CONFIG",
      `operator_listen_addr ${config.operatorListenAddr} cannot be bound: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      { cause: err },
    );
  }
  return { socket, url: socket.url, token: token.token, tls };
}

export interface RunningDashboard {
  context: DashboardContext;
  reloadTls(): boolean;
  close(): Promise<void>;
}

export async function serveDashboard(
  endpoint: OperatorEndpoint,
  sources: DashboardSources,
  options: DashboardContextOptions = {},
): Promise<RunningDashboard> {
  const { config, clock, logger } = sources;
  const context = new DashboardContext(sources, options);
  const { app, reloadTls } = buildOperatorServer({
    context,
    auth: new OperatorAuth({ token: endpoint.token, mtls: endpoint.tls?.caFile !== undefined, clock }),
    web: findWebRoot(),
    tls: endpoint.tls,
    readTimeoutMs: config.httpReadTimeoutMs,
    writeTimeoutMs: config.httpWriteTimeoutMs,
    idleTimeoutMs: config.httpIdleTimeoutMs,
    metrics: sources.registry,
    clock,
    logger,
  });
  await endpoint.socket.serve(app);
  context.start();
  logger.info({ url: endpoint.url, mtls: endpoint.tls?.caFile !== undefined }, "dashboard listening");
  return {
    context,
    reloadTls,
    async close() {
      context.stop();
      await app.close();
    },
  };
}

/**
 * Tests only: FRED_DASHBOARD_SAMPLE_MS shortens the sample ring's step and
 * FRED_DASHBOARD_CHAIN_TTL_MS the chain memo, so a process test sees samples and fresh
 * chain counts in seconds. Not config keys: production runs a minute and 15 s.
 */
export function dashboardTestTiming(
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
): DashboardContextOptions {
  const ms = (name: string) => {
    const v = env[name];
    if (v === undefined || !/^\d{2,7}$/.test(v)) return undefined;
    logger.warn({ [name]: Number(v) }, "dashboard timing shortened (tests only)");
    return Number(v);
  };
  const sampleStepMs = ms("FRED_DASHBOARD_SAMPLE_MS");
  const chainTtlMs = ms("FRED_DASHBOARD_CHAIN_TTL_MS");
  return {
    ...(sampleStepMs === undefined ? {} : { sampleStepMs }),
    ...(chainTtlMs === undefined ? {} : { chainTtlMs }),
  };
}
