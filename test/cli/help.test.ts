import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Command } from "commander";
import { buildProgram } from "../../src/cli/main.ts";

function allCommands(cmd: Command, path: string[] = []): [string, Command][] {
  return cmd.commands.flatMap((sub) => {
    const here = [...path, sub.name()];
    return [[here.join(" "), sub] as [string, Command], ...allCommands(sub, here)];
  });
}

const program = await buildProgram();

describe("fred --help", () => {
  it("lists the top-level commands", () => {
    assert.ok(allCommands(program).length >= 3);
  });
  for (const [name, cmd] of allCommands(program)) {
    if (cmd.commands.length > 0) continue; // groups list their subcommands instead
    it(`\`fred ${name} --help\` describes the command and shows examples`, () => {
      let text = "";
      cmd.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
      cmd.outputHelp();
      assert.match(text, /Usage: /);
      assert.ok(cmd.description().length > 10, "needs a description");
      assert.match(text, /Examples:\n\s+\$ /);
      assert.match(text, /\$ fred /);
    });
  }
});
