import type { Command } from "commander";
import { retry } from "../../core/async/index.ts";
import { commandClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { leaseEnded } from "../../core/lease-rules.ts";
import { leaseArg } from "../chain.ts";
import { printText, say } from "../output.ts";
import { apiForLease, type LeaseFlags, progress, withLeaseFlags } from "./context.ts";
import { streamLogs } from "./follow-logs.ts";
import type { ApiAnswer, TenantApi } from "./tenant-api.ts";
import {
  emit,
  eventLine,
  logLine,
  logLines,
  type OutputMode,
  outputMode,
  statusLines,
  table,
} from "./view.ts";

/**
 * The reads of a lease: status, connection, logs, events, releases. Each prints the API's
 * answer body on stdout as it is (one JSON line) and a short view on stderr.
 */
export function registerLeaseReads(lease: Command): void {
  withLeaseFlags(lease.command("status").description("The lease's chain state and the provider's view"))
    .argument("<uuid>", "lease UUID")
    .addHelpText("after", "\nExamples:\n  $ fred lease status $LEASE --from tenant1 --home .fred/devnet")
    .action(async (uuid: string, opts: LeaseFlags) => {
      const mode = outputMode(opts);
      const api = await apiForLease(opts, leaseArg(uuid));
      // Our extra keys too (the API leaves them out unless asked): the CLI shows everything.
      const { body } = await api.lease(uuid, "status?include=credit,terminal_budget");
      if (mode === "json")
        progress(
          `${body.state} · ${body.provision_status ?? "not provisioned"}${body.message ? ` · ${body.message}` : ""}`,
        );
      emit(mode, body, () => statusLines(body));
    });

  withLeaseFlags(
    lease.command("connect").description("Connection details of an ACTIVE lease, with ready-to-use URLs"),
  )
    .argument("<uuid>", "lease UUID")
    .addHelpText("after", "\nExamples:\n  $ fred lease connect $LEASE --from tenant1 --home .fred/devnet")
    .action(async (uuid: string, opts: LeaseFlags) => {
      const mode = outputMode(opts);
      const api = await apiForLease(opts, leaseArg(uuid));
      const { body } = await explainEnded(api, uuid, () => api.lease(uuid, "connection"));
      const urls = connectionUrls(body.connection);
      if (mode === "json") for (const url of urls) progress(url);
      emit(mode, body, () => (urls.length > 0 ? urls : [JSON.stringify(body.connection ?? body)]));
    });

  withLeaseFlags(lease.command("logs").description("The last lines of each container's log"))
    .argument("<uuid>", "lease UUID")
    .option("--tail <n>", "lines per container, 1 to 10000", "100")
    .option(
      "--follow",
      "stream new lines until the lease ends or Ctrl-C (text: <ts> <service/instance> | <line>; json: the stream's frames {service, instance, ts, stream, line})",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  $ fred lease logs $LEASE --tail 20 --from tenant1 --home .fred/devnet\n  $ fred lease logs $LEASE --follow --key-hex $KEY",
    )
    .action(async (uuid: string, opts: LeaseFlags & { tail: string; follow?: boolean }) => {
      if (!/^[1-9][0-9]{0,4}$/.test(opts.tail) || Number(opts.tail) > 10_000)
        throw new FredError("ERR_USAGE", `--tail must be 1 to 10000, got ${JSON.stringify(opts.tail)}`);
      const mode = outputMode(opts);
      const api = await apiForLease(opts, leaseArg(uuid));
      const read = async () =>
        (await explainEnded(api, uuid, () => api.lease(uuid, `logs?tail=${opts.tail}`))).body;
      if (opts.follow === true) {
        const stop = AbortSignal.any([abortOnSignal("SIGINT"), abortOnSignal("SIGTERM")]);
        if ((await streamLogs(api, uuid, opts.tail, mode, stop)) !== "unsupported") return;
        say("fred: this provider does not stream logs; polling the tail every 2 s instead");
        return followLogs(read, mode, stop);
      }
      const body = await read();
      emit(mode, body, () => logLines(body.logs));
    });

  withLeaseFlags(lease.command("releases").description("The lease's deployment history, oldest first"))
    .argument("<uuid>", "lease UUID")
    .addHelpText("after", "\nExamples:\n  $ fred lease releases $LEASE --from tenant1 --home .fred/devnet")
    .action(async (uuid: string, opts: LeaseFlags) => {
      const mode = outputMode(opts);
      const api = await apiForLease(opts, leaseArg(uuid));
      const { body } = await api.lease(uuid, "releases");
      const releases = Array.isArray(body.releases) ? (body.releases as Record<string, unknown>[]) : [];
      const rows = releases.map((r) => [
        `v${r.version}`,
        String(r.status ?? ""),
        String(r.image ?? ""),
        String(r.created_at ?? ""),
      ]);
      if (mode === "json") for (const row of rows) progress(row.join(" ").trim());
      emit(mode, body, () => table([["VERSION", "STATUS", "IMAGE", "CREATED"], ...rows]));
    });

  withLeaseFlags(
    lease
      .command("events")
      .description("Stream the lease's status frames (text: one readable line each; json: the frames)"),
  )
    .argument("<uuid>", "lease UUID")
    .option(
      "--until-ended",
      "stop when the lease is closed, rejected or expired (seen in a frame, or by GET status every 5 s)",
    )
    .addHelpText("after", "\nExamples:\n  $ fred lease events $LEASE --from tenant1 --home .fred/devnet")
    .action(async (uuid: string, opts: LeaseFlags & { untilEnded?: boolean }) => {
      const mode = outputMode(opts);
      const api = await apiForLease(opts, leaseArg(uuid));
      await streamEvents(api, uuid, opts.untilEnded === true, mode);
    });
}

/**
 * Runs a read that only a running lease answers (connection, live logs); when it is
 * refused because the lease has ended, says what became of it and how to get it back
 * instead of the bare refusal.
 */
async function explainEnded(
  api: TenantApi,
  uuid: string,
  read: () => Promise<ApiAnswer>,
): Promise<ApiAnswer> {
  try {
    return await read();
  } catch (err) {
    const status = await api.lease(uuid, "status").catch(() => undefined);
    const state = status?.body.state;
    if (typeof state !== "string" || !leaseEnded(state)) throw err;
    const word = state.replace("LEASE_STATE_", "").toLowerCase();
    const body = status?.body ?? {};
    const next =
      body.provision_status === "retained"
        ? `data retained${typeof body.retained_until === "string" ? ` until ${body.retained_until}` : ""}; restore it with fred lease restore ${uuid}`
        : "its data was not retained";
    throw new FredError("ERR_TENANT_API", `lease ${uuid} is ${word}; ${next}`, { cause: err });
  }
}

/**
 * Every URL a person can open for a connection: https for each fqdn, and for each bound TCP
 * port the connection's own `protocol` (http when it names none), without the scheme's
 * default port.
 */
export function connectionUrls(connection: unknown): string[] {
  const urls = new Set<string>();
  const walk = (v: unknown, host: string | undefined, scheme: string): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(x, host, scheme);
      return;
    }
    if (typeof v !== "object" || v === null) return;
    const o = v as Record<string, unknown>;
    const here = typeof o.host === "string" ? o.host : host;
    const proto = o.protocol === "https" || o.protocol === "http" ? o.protocol : scheme;
    if (typeof o.fqdn === "string" && o.fqdn !== "") urls.add(`https://${o.fqdn}/`);
    if (typeof o.ports === "object" && o.ports !== null) {
      for (const [port, b] of Object.entries(
        o.ports as Record<string, { host_ip?: string; host_port?: unknown }>,
      )) {
        if (!port.endsWith("/tcp") || b?.host_port === undefined) continue;
        const ip = b.host_ip !== undefined && b.host_ip !== "0.0.0.0" && b.host_ip !== "" ? b.host_ip : here;
        if (ip === undefined) continue;
        const defaultPort = String(b.host_port) === (proto === "https" ? "443" : "80");
        urls.add(`${proto}://${ip.includes(":") ? `[${ip}]` : ip}${defaultPort ? "" : `:${b.host_port}`}/`);
      }
    }
    for (const key of ["instances", "services"])
      if (o[key] !== undefined) walk(Object.values(o[key] as object), here, proto);
  };
  walk(connection, undefined, "http");
  return [...urls];
}

/** The lines of `now` that come after the last line already printed from `before`. */
export function newLines(before: readonly string[], now: readonly string[]): string[] {
  if (before.length === 0) return [...now];
  const last = before[before.length - 1];
  const at = now.lastIndexOf(last as string);
  return at === -1 ? [...now] : now.slice(at + 1);
}

/**
 * For a provider that does not stream logs (an older one): polls the log tail and prints
 * the lines not printed yet. The API's lines carry no time of their own, so each is
 * stamped with when this command first saw it.
 */
async function followLogs(
  read: () => Promise<Record<string, unknown>>,
  mode: OutputMode,
  stop: AbortSignal,
): Promise<void> {
  const seen = new Map<string, string[]>();
  while (!stop.aborted) {
    const logs = ((await read()).logs ?? {}) as Record<string, string>;
    const time = new Date().toISOString();
    for (const [instance, text] of Object.entries(logs)) {
      const lines = text.split("\n").filter((l) => l !== "");
      for (const line of newLines(seen.get(instance) ?? [], lines))
        emit(mode, { instance, line, time }, () => [logLine(instance, line, time)]);
      seen.set(instance, lines);
    }
    await commandClock.sleep(2000, stop).catch(() => {});
  }
}

function abortOnSignal(name: NodeJS.Signals): AbortSignal {
  const ctl = new AbortController();
  process.once(name, () => ctl.abort());
  return ctl.signal;
}

/**
 * Prints frames until Ctrl-C (or the lease's end); reconnects with `since` when the stream
 * closes. The stream has no frame for every end (a close whose workload kept no data sends
 * none), so `--until-ended` also asks GET status every few seconds.
 */
async function streamEvents(
  api: TenantApi,
  uuid: string,
  untilEnded: boolean,
  mode: OutputMode,
): Promise<void> {
  // Ends the stream and the status watch: Ctrl-C, SIGTERM, or the lease's end.
  const over = new AbortController();
  const stop = AbortSignal.any([abortOnSignal("SIGINT"), abortOnSignal("SIGTERM"), over.signal]);
  let since: number | undefined;
  let ended = false;
  // Whichever sees it first, a frame or the status watch, says so once.
  const end = (state: string) => {
    if (ended) return;
    ended = true;
    say(`fred: lease ${uuid} is ${state.replace("LEASE_STATE_", "").toLowerCase()}`);
    over.abort();
  };
  if (untilEnded)
    void statusSaysEnded(api, uuid, stop).then((state) => {
      if (state !== undefined) end(state);
    });
  await retry(
    () =>
      new Promise<void>((resolve, reject) => {
        const path = `/v1/leases/${uuid}/events${since === undefined ? "" : `?since=${since}`}`;
        const ws = api.webSocket(uuid, path);
        const finish = () => {
          ws.close(1000);
          resolve();
        };
        stop.addEventListener("abort", finish, { once: true });
        ws.on("unexpected-response", (_q, res) => {
          stop.removeEventListener("abort", finish);
          const retryable = res.statusCode === 429 || res.statusCode === 503;
          reject(
            new FredError("ERR_TENANT_API", `event stream refused: HTTP ${res.statusCode}`, { retryable }),
          );
        });
        ws.on("error", (err) => reject(new FredError("ERR_TENANT_API", err.message, { retryable: true })));
        ws.on("close", () => {
          stop.removeEventListener("abort", finish);
          if (stop.aborted || ended) resolve();
          else reject(new FredError("ERR_TENANT_API", "event stream closed", { retryable: true }));
        });
        ws.on("message", (data) => {
          const text = String(data);
          const frame = JSON.parse(text) as { seq?: number; state?: string };
          if (mode === "json") process.stdout.write(`${text}\n`);
          else printText(eventLine(frame as Record<string, unknown>));
          if (typeof frame.seq === "number") since = frame.seq;
          if (untilEnded && leaseEnded(frame.state ?? "")) end(frame.state as string);
        });
      }),
    { clock: commandClock, backoff: { initialMs: 500, maxMs: 10_000 }, signal: stop },
  ).catch((err: unknown) => {
    if (!stop.aborted) throw err;
  });
  over.abort(); // the status watch, when the stream ended first
}

/** Every 5 s, the lease's chain state from GET status, until it has ended (returned) or `stop`. */
async function statusSaysEnded(api: TenantApi, uuid: string, stop: AbortSignal): Promise<string | undefined> {
  while (!stop.aborted) {
    await commandClock.sleep(5_000, stop).catch(() => {});
    if (stop.aborted) return undefined;
    const state = (await api.lease(uuid, "status").catch(() => undefined))?.body.state;
    if (typeof state === "string" && leaseEnded(state)) return state;
  }
  return undefined;
}
