import { rmSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { Command } from "commander";
import { ReleaseStack } from "../../core/async/index.ts";
import { parseConfigDuration } from "../../core/duration.ts";
import { FredError } from "../../core/errors.ts";
import { splitHostPort } from "../../core/host-port.ts";
import { mockBackendUpComponent } from "../backend.ts";
import { devnetUpComponent } from "../devnet.ts";
import { LOCAL_PROVIDER_URL } from "../lease/index.ts";
import { say } from "../output.ts";
import type { RunningComponent, UpComponent, UpContext } from "./component.ts";
import { dockerBackendUpComponent, removeUpContainers } from "./docker-backend.ts";
import { ensureLocalTls } from "./local-tls.ts";
import { releaseLoopbackBtrfs } from "./loopback-btrfs.ts";
import { providerdUpComponent } from "./providerd.ts";

/**
 * `fred up`: one command that starts every local component on embedded defaults, with
 * state under ./.fred/. Components register here as they are built; each one starts,
 * reports how to reach it, and stops on Ctrl-C in reverse order.
 */
export const upComponents: UpComponent[] = [devnetUpComponent, mockBackendUpComponent, providerdUpComponent];

/** With `--docker` (or a `--volume-path`) the Docker backend takes the mock's place. */
export function componentsFor(docker: boolean): UpComponent[] {
  return upComponents.map((c) => (docker && c === mockBackendUpComponent ? dockerBackendUpComponent : c));
}

const BANNER_WIDTH = 80;

/**
 * The banner's lines folded to fit an 80-column terminal. A long line is broken at spaces
 * with a hanging indent; when it holds a command (`fred …`, `curl …`), each break ends in
 * " \\" so the folded command still pastes into a shell as one. A single word longer than
 * the width (a deep path) stays whole.
 */
export function fitBanner(lines: readonly string[], width = BANNER_WIDTH): string[] {
  const out: string[] = [];
  for (const line of lines) {
    if (line.length <= width) {
      out.push(line);
      continue;
    }
    const indent = /^ */.exec(line)?.[0] ?? "";
    const command = /(^|\s|: +)(fred|curl) /.test(line.trimStart());
    const hang = `${indent}    `;
    const tail = command ? " \\" : "";
    // A trailing "# comment" goes on its own line after the command.
    const [body, comment] = command && line.includes("  # ") ? line.split(/ {2,}# /, 2) : [line, undefined];
    let rest = (body as string).trimEnd();
    let prefix = "";
    while (prefix.length + rest.length > width) {
      const room = width - prefix.length - tail.length;
      const at = rest.lastIndexOf(" ", room);
      if (at <= rest.length - rest.trimStart().length) break; // one word longer than the line
      out.push(`${prefix}${rest.slice(0, at).trimEnd()}${tail}`);
      rest = rest.slice(at).trimStart();
      prefix = hang;
    }
    out.push(`${prefix}${rest}`);
    if (comment !== undefined) out.push(`${hang}# ${comment}`);
  }
  return out;
}

/**
 * The banner's paths under the working directory, written relative to it (`.fred/…`, as
 * the README writes them): shorter lines, and what a person in this directory types.
 */
export function relativePaths(lines: readonly string[], cwd = process.cwd()): string[] {
  const prefix = `${cwd.replace(/\/$/, "")}/`;
  return lines.map((line) => line.split(prefix).join(""));
}

/** The tenant walkthrough printed once everything runs (the demo needs --docker). */
function walkthrough(ctx: UpContext): string[] {
  const manifest = ctx.facts.get("demo_manifest");
  // `fred lease` finds providerd through the provider record on chain (and trusts the local
  // CA through --home); without that record, at 127.0.0.1:8080 or as --provider-url.
  const api = ctx.facts.get("providerd_url");
  const found =
    ctx.facts.has("api_url_on_chain") || api === undefined || api === LOCAL_PROVIDER_URL.replace(/\/$/, "");
  const keys = `--from tenant1 --home ${ctx.facts.get("devnet_home")} --rpc ${ctx.facts.get("rpc")}${
    found ? "" : ` --provider-url ${api}`
  }`;
  if (manifest === undefined)
    return [
      "Real containers: run `fred up --docker` (needs a Docker engine; as root it also",
      "prepares btrfs volumes).",
      `Try a lease:  fred chain lease create --sku docker-small ${keys}`,
    ];
  return [
    "Walkthrough (another terminal):",
    `  fred lease deploy --sku docker-small --manifest ${manifest} ${keys}`,
    ...reach(ctx, keys),
    `  fred lease logs <lease_uuid> ${keys}`,
    `  fred lease close <lease_uuid> ${keys}`,
  ];
}

/** How the walkthrough opens the demo: its https name through the ingress proxy, else its port. */
function reach(ctx: UpContext, keys: string): string[] {
  const ca = ctx.facts.get("ingress_ca");
  const listen = ctx.facts.get("ingress_listen");
  if (ca === undefined || listen === undefined)
    return [
      `  fred lease connect <lease_uuid> ${keys}       # prints http://127.0.0.1:<port>/`,
      "  curl http://127.0.0.1:<port>/                 # hello from fred",
    ];
  // *.localhost is loopback (curl resolves it itself); a port other than 443 is named.
  const port = splitHostPort(listen)?.port ?? "443";
  const to = port === "443" ? "" : ` --connect-to ::127.0.0.1:${port}`;
  return [
    `  fred lease connect <lease_uuid> ${keys}       # prints https://<fqdn>/ and http://127.0.0.1:<port>/`,
    `  curl --cacert ${ca}${to} https://<fqdn>/       # hello from fred`,
  ];
}

const TOOLS = [
  "fred lease …                deploy, connect, logs, update, close, restore",
  "fred chain …                fund credit; create, show, close and list leases",
  "fred token mint|verify      mint and check ADR-036 tenant tokens",
  "fred manifest validate      check a manifest against the backends' rules",
  "fred keys …                 the provider keyring",
  "fred placement inspect      providerd's placement records",
];

interface UpFlags {
  home: string;
  docker?: boolean;
  reset?: boolean;
  volumePath?: string;
  retentionMaxAge: string;
}

export function registerUpCommand(program: Command): void {
  program
    .command("up")
    .description("Start every local component on embedded defaults (state under ./.fred/); Ctrl-C stops all")
    .option("--home <dir>", "state directory", ".fred")
    .option("--docker", "run tenant containers on the local Docker engine instead of the mock backend")
    .option("--reset", "delete the state directory first and start over (a new chain, new leases)")
    .option(
      "--volume-path <dir>",
      "tenant volumes on this btrfs folder (quotas enabled) instead of a loopback file; implies --docker",
    )
    .option(
      "--retention-max-age <duration>",
      "how long a closed lease's data is kept for restore before the reaper destroys it (0 = kept)",
      "2160h",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  $ npm start\n  $ fred up --docker\n  $ fred up --volume-path /srv/btrfs/fred --retention-max-age 1h\n  $ fred up --home /tmp/fred-demo --reset\n\nA second start resumes the same chain, leases and containers.",
    )
    .action(async (opts: UpFlags) => {
      const maxAge = parseConfigDuration(opts.retentionMaxAge);
      if (!maxAge.ok)
        throw new FredError(
          "ERR_USAGE",
          `--retention-max-age must be a duration such as 30s, 24h or 0, got ${JSON.stringify(opts.retentionMaxAge)}`,
        );
      if (opts.volumePath !== undefined && !isAbsolute(opts.volumePath))
        throw new FredError("ERR_USAGE", `--volume-path must be an absolute path, got ${opts.volumePath}`);
      if (opts.reset === true) {
        const removed = await removeUpContainers(opts.home);
        if (removed > 0) say(`fred up: removed ${removed} demo container(s) of the old chain`);
        releaseLoopbackBtrfs(join(opts.home, "docker-backend"));
        rmSync(opts.home, { recursive: true, force: true });
        say(`fred up: removed ${opts.home}; starting over`);
      }
      const ctx: UpContext = { home: opts.home, facts: new Map() };
      if (opts.volumePath !== undefined) ctx.facts.set("volume_path", opts.volumePath);
      ctx.facts.set("retention_max_age", opts.retentionMaxAge);
      const tls = ensureLocalTls(opts.home);
      if (tls === undefined)
        say("fred up: no openssl on PATH: providerd serves plain http, off the chain record");
      else {
        ctx.facts.set("tls_ca_file", tls.caFile);
        ctx.facts.set("tls_cert_file", tls.certFile);
        ctx.facts.set("tls_key_file", tls.keyFile);
      }
      const running: RunningComponent[] = [];
      // Stopped in reverse order of start; a component that fails to stop is said, the rest still stop.
      const stack = new ReleaseStack((err, name) => say(`fred up: stopping ${name} failed: ${String(err)}`));
      const stopAll = () => stack.close().catch(() => {});
      try {
        for (const component of componentsFor(opts.docker === true || opts.volumePath !== undefined)) {
          say(`starting ${component.name}…`);
          const started = await component.start(ctx);
          running.push(started);
          stack.defer(component.name, () => started.stop());
        }
      } catch (err) {
        await stopAll();
        throw err;
      }
      say("");
      if (running.length === 0) {
        say("fred up: no long-running components are built yet; nothing to start.");
      } else {
        for (const c of running) for (const line of fitBanner(relativePaths(c.summary))) say(line);
      }
      say("");
      for (const line of fitBanner(relativePaths(walkthrough(ctx)))) say(line);
      say("");
      say("Tools available now:");
      for (const line of TOOLS) say(`  ${line}`);
      if (running.length === 0) return;
      say("\nPress Ctrl-C to stop.");
      await new Promise<void>((resolve) => {
        const onSignal = () => resolve();
        process.once("SIGINT", onSignal);
        process.once("SIGTERM", onSignal);
      });
      say("stopping…");
      await stopAll();
    });
}
