import type { Command } from "commander";
import WebSocket from "ws";
import { retry } from "../../core/async/index.ts";
import { FredError } from "../../core/errors.ts";
import { commandClock, leaseArg } from "../chain.ts";
import { printJson } from "../output.ts";
import { apiForLease, type LeaseFlags, progress, withLeaseFlags } from "./context.ts";
import type { TenantApi } from "./tenant-api.ts";

/**
 * The reads of a lease: status, connection, logs, events, releases. Each prints the API's
 * answer body on stdout as it is (one JSON line) and a short view on stderr.
 */
export function registerLeaseReads(lease: Command): void {
  withLeaseFlags(lease.command("status").description("The lease's chain state and the provider's view"))
    .argument("<uuid>", "lease UUID")
    .addHelpText("after", "\nExamples:\n  $ fred lease status $LEASE --from tenant1 --home .fred/devnet")
    .action(async (uuid: string, opts: LeaseFlags) => {
      const api = await apiForLease(opts, leaseArg(uuid));
      // Our extra keys too (the API leaves them out unless asked): the CLI shows everything.
      const { body } = await api.lease(uuid, "status?include=credit,terminal_budget");
      progress(
        `${body.state} · ${body.provision_status ?? "not provisioned"}${body.message ? ` · ${body.message}` : ""}`,
      );
      printJson(body);
    });

  withLeaseFlags(
    lease.command("connect").description("Connection details of an ACTIVE lease, with ready-to-use URLs"),
  )
    .argument("<uuid>", "lease UUID")
    .addHelpText("after", "\nExamples:\n  $ fred lease connect $LEASE --from tenant1 --home .fred/devnet")
    .action(async (uuid: string, opts: LeaseFlags) => {
      const api = await apiForLease(opts, leaseArg(uuid));
      const { body } = await api.lease(uuid, "connection");
      for (const url of connectionUrls(body.connection)) progress(url);
      printJson(body);
    });

  withLeaseFlags(lease.command("logs").description("The last lines of each container's log"))
    .argument("<uuid>", "lease UUID")
    .option("--tail <n>", "lines per container, 1 to 10000", "100")
    .option("--follow", "keep printing new lines (one JSON line each: {instance, line}) until Ctrl-C")
    .addHelpText(
      "after",
      "\nExamples:\n  $ fred lease logs $LEASE --tail 20 --from tenant1 --home .fred/devnet\n  $ fred lease logs $LEASE --follow --key-hex $KEY",
    )
    .action(async (uuid: string, opts: LeaseFlags & { tail: string; follow?: boolean }) => {
      if (!/^[1-9][0-9]{0,4}$/.test(opts.tail) || Number(opts.tail) > 10_000)
        throw new FredError("ERR_USAGE", `--tail must be 1 to 10000, got ${JSON.stringify(opts.tail)}`);
      const api = await apiForLease(opts, leaseArg(uuid));
      const read = async () => (await api.lease(uuid, `logs?tail=${opts.tail}`)).body;
      if (opts.follow === true) return followLogs(read);
      printJson(await read());
    });

  withLeaseFlags(lease.command("releases").description("The lease's deployment history, oldest first"))
    .argument("<uuid>", "lease UUID")
    .addHelpText("after", "\nExamples:\n  $ fred lease releases $LEASE --from tenant1 --home .fred/devnet")
    .action(async (uuid: string, opts: LeaseFlags) => {
      const api = await apiForLease(opts, leaseArg(uuid));
      const { body } = await api.lease(uuid, "releases");
      const releases = Array.isArray(body.releases) ? (body.releases as Record<string, unknown>[]) : [];
      for (const r of releases)
        progress(`v${r.version} ${r.status} ${r.image ?? ""} ${r.created_at ?? ""}`.trim());
      printJson(body);
    });

  withLeaseFlags(lease.command("events").description("Stream the lease's status frames (one JSON line each)"))
    .argument("<uuid>", "lease UUID")
    .option("--until-ended", "stop when the lease is closed, rejected or expired")
    .addHelpText("after", "\nExamples:\n  $ fred lease events $LEASE --from tenant1 --home .fred/devnet")
    .action(async (uuid: string, opts: LeaseFlags & { untilEnded?: boolean }) => {
      const api = await apiForLease(opts, leaseArg(uuid));
      await streamEvents(api, uuid, opts.untilEnded === true);
    });
}

/** Every URL a person can open for a connection: https for each fqdn, http for each bound TCP port. */
export function connectionUrls(connection: unknown): string[] {
  const urls = new Set<string>();
  const walk = (v: unknown, host: string | undefined): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(x, host);
      return;
    }
    if (typeof v !== "object" || v === null) return;
    const o = v as Record<string, unknown>;
    const here = typeof o.host === "string" ? o.host : host;
    if (typeof o.fqdn === "string" && o.fqdn !== "") urls.add(`https://${o.fqdn}/`);
    if (typeof o.ports === "object" && o.ports !== null) {
      for (const [port, b] of Object.entries(
        o.ports as Record<string, { host_ip?: string; host_port?: unknown }>,
      )) {
        if (!port.endsWith("/tcp") || b?.host_port === undefined) continue;
        const ip = b.host_ip !== undefined && b.host_ip !== "0.0.0.0" && b.host_ip !== "" ? b.host_ip : here;
        if (ip !== undefined) urls.add(`http://${ip.includes(":") ? `[${ip}]` : ip}:${b.host_port}/`);
      }
    }
    for (const key of ["instances", "services"])
      if (o[key] !== undefined) walk(Object.values(o[key] as object), here);
  };
  walk(connection, undefined);
  return [...urls];
}

/** The lines of `now` that come after the last line already printed from `before`. */
export function newLines(before: readonly string[], now: readonly string[]): string[] {
  if (before.length === 0) return [...now];
  const last = before[before.length - 1];
  const at = now.lastIndexOf(last as string);
  return at === -1 ? [...now] : now.slice(at + 1);
}

async function followLogs(read: () => Promise<Record<string, unknown>>): Promise<void> {
  const seen = new Map<string, string[]>();
  const stop = AbortSignal.any([abortOnSignal("SIGINT"), abortOnSignal("SIGTERM")]);
  while (!stop.aborted) {
    const logs = ((await read()).logs ?? {}) as Record<string, string>;
    for (const [instance, text] of Object.entries(logs)) {
      const lines = text.split("\n").filter((l) => l !== "");
      for (const line of newLines(seen.get(instance) ?? [], lines)) printJson({ instance, line });
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

/** Prints frames until Ctrl-C (or the lease's end); reconnects with `since` when the stream closes. */
async function streamEvents(api: TenantApi, uuid: string, untilEnded: boolean): Promise<void> {
  const stop = AbortSignal.any([abortOnSignal("SIGINT"), abortOnSignal("SIGTERM")]);
  let since: number | undefined;
  let ended = false;
  await retry(
    () =>
      new Promise<void>((resolve, reject) => {
        const path = `/v1/leases/${uuid}/events${since === undefined ? "" : `?since=${since}`}`;
        const ws = new WebSocket(api.url(path).replace(/^http/, "ws"), {
          headers: { authorization: `Bearer ${api.token(uuid)}` },
          ...api.wsOptions(),
        });
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
          process.stdout.write(`${text}\n`);
          const frame = JSON.parse(text) as { seq?: number; state?: string };
          if (typeof frame.seq === "number") since = frame.seq;
          if (untilEnded && /_(CLOSED|REJECTED|EXPIRED)$/.test(frame.state ?? "")) {
            ended = true;
            ws.close(1000);
          }
        });
      }),
    { clock: commandClock, backoff: { initialMs: 500, maxMs: 10_000 }, signal: stop },
  ).catch((err: unknown) => {
    if (!stop.aborted) throw err;
  });
}
