import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { mockBackendUpComponent } from "../backend.ts";
import { devnetUpComponent } from "../devnet.ts";
import { LOCAL_PROVIDER_URL } from "../lease/index.ts";
import { say } from "../output.ts";
import type { RunningComponent, UpComponent, UpContext } from "./component.ts";
import { dockerBackendUpComponent, removeUpContainers } from "./docker-backend.ts";
import { releaseLoopbackBtrfs } from "./loopback-btrfs.ts";
import { providerdUpComponent } from "./providerd.ts";

/**
 * `fred up`: one command that starts every local component on embedded defaults, with
 * state under ./.fred/. Components register here as they are built; each one starts,
 * reports how to reach it, and stops on Ctrl-C in reverse order.
 */
export const upComponents: UpComponent[] = [devnetUpComponent, mockBackendUpComponent, providerdUpComponent];

/** With `--docker` the Docker backend takes the mock's place. */
export function componentsFor(docker: boolean): UpComponent[] {
  return upComponents.map((c) => (docker && c === mockBackendUpComponent ? dockerBackendUpComponent : c));
}

/** The tenant walkthrough printed once everything runs (the demo needs --docker). */
function walkthrough(ctx: UpContext): string[] {
  const manifest = ctx.facts.get("demo_manifest");
  // `fred lease` finds providerd at 127.0.0.1:8080 by default; say so when it runs elsewhere.
  const api = ctx.facts.get("providerd_url");
  const keys = `--from tenant1 --home ${ctx.facts.get("devnet_home")} --rpc ${ctx.facts.get("rpc")}${
    api === undefined || api === LOCAL_PROVIDER_URL.replace(/\/$/, "") ? "" : ` --provider-url ${api}`
  }`;
  if (manifest === undefined)
    return [
      "Real containers: run `fred up --docker` (a Docker engine; as root it also prepares btrfs volumes).",
      `Try a lease:  fred chain lease create --sku docker-small ${keys}`,
    ];
  return [
    "Walkthrough (another terminal):",
    `  fred lease deploy --sku docker-small --manifest ${manifest} ${keys}`,
    `  fred lease connect <lease_uuid> ${keys}       # prints http://127.0.0.1:<port>/`,
    "  curl http://127.0.0.1:<port>/                 # hello from fred",
    `  fred lease logs <lease_uuid> ${keys}`,
    `  fred lease close <lease_uuid> ${keys}`,
  ];
}

const TOOLS = [
  "fred lease …                the tenant journey: deploy, connect, logs, update, close, restore",
  "fred chain …                fund credit; create, show, close and list leases",
  "fred token mint|verify      mint and check ADR-036 tenant tokens",
  "fred manifest validate      check a tenant manifest against the rules backends enforce",
  "fred keys …                 the provider keyring",
  "fred placement inspect      providerd's placement records",
];

export function registerUpCommand(program: Command): void {
  program
    .command("up")
    .description("Start every local component on embedded defaults (state under ./.fred/); Ctrl-C stops all")
    .option("--home <dir>", "state directory", ".fred")
    .option("--docker", "run tenant containers on the local Docker engine instead of the mock backend")
    .option("--reset", "delete the state directory first and start over (a new chain, new leases)")
    .addHelpText(
      "after",
      "\nExamples:\n  $ npm start\n  $ fred up --docker\n  $ fred up --home /tmp/fred-demo --reset\n\nA second start resumes the same chain, leases and containers.",
    )
    .action(async (opts: { home: string; docker?: boolean; reset?: boolean }) => {
      if (opts.reset === true) {
        const removed = await removeUpContainers(opts.home);
        if (removed > 0) say(`fred up: removed ${removed} demo container(s) of the old chain`);
        releaseLoopbackBtrfs(join(opts.home, "docker-backend"));
        rmSync(opts.home, { recursive: true, force: true });
        say(`fred up: removed ${opts.home}; starting over`);
      }
      const ctx: UpContext = { home: opts.home, facts: new Map() };
      const running: RunningComponent[] = [];
      const stopAll = async () => {
        for (const c of running.reverse()) await c.stop().catch(() => {});
      };
      try {
        for (const component of componentsFor(opts.docker === true)) {
          say(`starting ${component.name}…`);
          running.push(await component.start(ctx));
        }
      } catch (err) {
        await stopAll();
        throw err;
      }
      say("");
      if (running.length === 0) {
        say("fred up: no long-running components are built yet; nothing to start.");
      } else {
        for (const c of running) for (const line of c.summary) say(line);
      }
      say("");
      for (const line of walkthrough(ctx)) say(line);
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
