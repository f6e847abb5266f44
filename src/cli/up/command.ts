import type { Command } from "commander";
import { mockBackendUpComponent } from "../backend.ts";
import { devnetUpComponent } from "../devnet.ts";
import { say } from "../output.ts";
import type { RunningComponent, UpComponent, UpContext } from "./component.ts";
import { providerdUpComponent } from "./providerd.ts";

/**
 * `fred up`: one command that starts every local component on embedded defaults, with
 * state under ./.fred/. Components register here as they are built; each one starts,
 * reports how to reach it, and stops on Ctrl-C in reverse order.
 */
export const upComponents: UpComponent[] = [devnetUpComponent, mockBackendUpComponent, providerdUpComponent];

const TOOLS = [
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
    .addHelpText("after", "\nExamples:\n  $ npm start\n  $ fred up --home /tmp/fred-demo")
    .action(async (opts: { home: string }) => {
      const ctx: UpContext = { home: opts.home, facts: new Map() };
      const running: RunningComponent[] = [];
      const stopAll = async () => {
        for (const c of running.reverse()) await c.stop().catch(() => {});
      };
      try {
        for (const component of upComponents) {
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
