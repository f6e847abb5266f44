import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { Command } from "commander";
import { buildProgram } from "../../src/cli/main.ts";
import { REPO_ROOT } from "../support/index.ts";

/**
 * Every `fred …` command the docs show must still parse: its subcommands exist and every
 * flag it uses is one that command (or a parent) accepts. A renamed flag or subcommand
 * fails here, before a reader copies a command that no longer works.
 */
const DOCS = [
  "README.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

interface Shown {
  file: string;
  line: number;
  text: string;
}

/** `fred …` lines inside fenced code blocks (a leading `$ ` prompt is dropped). */
export function shownCommands(file: string, text: string): Shown[] {
  const out: Shown[] = [];
  let fenced = false;
  text.split("\n").forEach((raw, i) => {
    if (/^\s*```/.test(raw)) {
      fenced = !fenced;
      return;
    }
    const m = fenced ? raw.match(/^\s*(?:\$\s+)?(?:[A-Z_]+=\S+\s+)*(fred\s.*)$/) : null;
    if (m !== null) out.push({ file, line: i + 1, text: m[1] as string });
  });
  return out;
}

/** The words of a shown command up to a comment, a pipe or a redirect, without quotes. */
function words(text: string): string[] {
  const cut = text.split(/\s#\s|\s\||\s>|\s&&|\s;/)[0] as string;
  return (cut.match(/"[^"]*"|'[^']*'|\S+/g) ?? []).map((w) => w.replace(/^["']|["']$/g, ""));
}

function flagsOf(cmd: Command): Set<string> {
  const flags = new Set<string>(["--help", "-h"]);
  for (let c: Command | null = cmd; c !== null; c = c.parent) {
    for (const o of c.options) {
      if (o.long !== undefined) flags.add(o.long);
      if (o.short !== undefined) flags.add(o.short);
      if (o.negate && o.long !== undefined) flags.add(o.long);
    }
  }
  if (cmd.name() === "fred") flags.add("--version");
  return flags;
}

/** Problems with one shown command, or [] when it parses. */
export function problems(program: Command, text: string): string[] {
  const argv = words(text).slice(1);
  let cmd = program;
  let i = 0;
  while (i < argv.length && cmd.commands.length > 0) {
    const word = argv[i] as string;
    if (word.startsWith("-") || word.startsWith("<") || word.startsWith("[")) break;
    // `a|b|c` shows several subcommands that take the same arguments: each must exist.
    const subs = word
      .split("|")
      .map((w) => cmd.commands.find((c) => c.name() === w || c.aliases().includes(w)));
    const missing = word.split("|").filter((_, k) => subs[k] === undefined);
    if (missing.length > 0) return missing.map((w) => `unknown subcommand "${w}" of "${cmd.name()}"`);
    cmd = subs[0] as Command;
    i++;
  }
  const accepted = flagsOf(cmd);
  const out: string[] = [];
  for (const w of argv.slice(i)) {
    // Past `--` the words are another program's (fred lease shell $LEASE -- sh -c …).
    if (w === "--") break;
    if (!/^--?[a-zA-Z]/.test(w)) continue;
    const flag = w.split("=")[0] as string;
    if (!accepted.has(flag)) out.push(`"${cmd.name()}" has no flag ${flag}`);
  }
  return out;
}

describe("commands shown in the docs", () => {
  it("finds commands to check", () => {
    const all = DOCS.flatMap((f) => shownCommands(f, readFileSync(join(REPO_ROOT, f), "utf8")));
    assert.ok(all.length >= 40, `only ${all.length} commands found`);
  });

  it("flags a renamed subcommand and an unknown flag (the check can fail)", async () => {
    const program = await buildProgram();
    assert.deepEqual(problems(program, "fred lease deploy --sku x --manifest m.json --from t --home h"), []);
    assert.match(problems(program, "fred lease deplooy --sku x")[0] ?? "", /unknown subcommand "deplooy"/);
    assert.match(problems(program, "fred lease status <uuid> --frm t")[0] ?? "", /no flag --frm/);
    assert.deepEqual(problems(program, "fred lease status|connect <uuid> --from t"), []);
    assert.deepEqual(problems(program, "fred lease shell <uuid> --service web -- sh -c 'exit 3'"), []);
    assert.match(
      problems(program, "fred lease shell <uuid> --servce web -- sh")[0] ?? "",
      /no flag --servce/,
    );
    assert.match(
      problems(program, "fred lease status|conect <uuid>")[0] ?? "",
      /unknown subcommand "conect"/,
    );
  });

  for (const file of DOCS) {
    it(`every fred command in ${file} parses`, async () => {
      const program = await buildProgram();
      const bad = shownCommands(file, readFileSync(join(REPO_ROOT, file), "utf8")).flatMap((c) =>
        problems(program, c.text).map((p) => `${c.file}:${c.line}: ${p} — ${c.text}`),
      );
      assert.deepEqual(bad, []);
    });
  }
});
