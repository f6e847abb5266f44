import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { buildProgram } from "../../src/cli/main.ts";
// The one parser of commands shown in the docs (it checks fenced blocks; runbooks show theirs inline).
import { problems } from "../cli/doc-commands.test.ts";
import { REPO_ROOT } from "../support/index.ts";

/**
 * Every alert in deploy/prometheus/fred-alerts.yml is actionable from its page: it has a
 * severity an on-call rota can route (page or warn), a summary and a description, and a
 * `runbook_url` whose anchor lands on a heading named after the alert in the "Alerts and
 * runbooks" part of docs/operator-guide.md; and every runbook there belongs to an alert
 * (a renamed alert cannot leave its runbook behind). The `fred …` commands the runbooks
 * show inline must parse, like those in the docs' code blocks.
 */
const GUIDE = "docs/operator-guide.md";
const PART = "Alerts and runbooks";

interface Rule {
  alert: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const rules = (
  parse(readFileSync(join(REPO_ROOT, "deploy", "prometheus", "fred-alerts.yml"), "utf8")) as {
    groups: { rules: Rule[] }[];
  }
).groups.flatMap((g) => g.rules);

interface Heading {
  level: number;
  text: string;
  anchor: string;
}

/**
 * The anchor GitHub gives a heading: lower case, every character that is not a letter,
 * digit, mark, connector, space or hyphen dropped, spaces to hyphens, and a repeat of an
 * earlier anchor suffixed -1, -2, ….
 */
function headings(markdown: string): Heading[] {
  const seen = new Map<string, number>();
  const out: Heading[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line);
    if (m === null) continue;
    const text = m[2] as string;
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base);
    seen.set(base, (n ?? -1) + 1);
    out.push({ level: (m[1] as string).length, text, anchor: n === undefined ? base : `${base}-${n + 1}` });
  }
  return out;
}

/** The headings one level below the part's own heading, up to the next heading of its level. */
function runbookHeadings(all: Heading[]): Heading[] {
  const start = all.findIndex((h) => h.text === PART);
  assert.ok(start >= 0, `${GUIDE} has no "${PART}" heading`);
  const level = (all[start] as Heading).level;
  const rest = all.slice(start + 1);
  const end = rest.findIndex((h) => h.level <= level);
  return (end < 0 ? rest : rest.slice(0, end)).filter((h) => h.level === level + 1);
}

/** The runbooks part of the guide: from its heading to the next heading of its level. */
function partText(markdown: string): string {
  const start = markdown.indexOf(`\n## ${PART}\n`);
  assert.ok(start >= 0, `${GUIDE} has no "## ${PART}"`);
  const next = markdown.indexOf("\n## ", start + 1);
  return next < 0 ? markdown.slice(start) : markdown.slice(start, next);
}

describe("alert runbooks", () => {
  const guide = readFileSync(join(REPO_ROOT, GUIDE), "utf8");
  const all = headings(guide);
  const runbooks = runbookHeadings(all);
  const alertNames = new Set(rules.map((r) => r.alert));

  it("the anchor function gives GitHub's anchors", () => {
    const sample = headings(
      "# A `b` c\n## 5. What to watch\n```sh\n# not a heading\n```\n### A b c\n### FredAckFailing\n",
    );
    assert.deepEqual(
      sample.map((h) => h.anchor),
      ["a-b-c", "5-what-to-watch", "a-b-c-1", "fredackfailing"],
    );
  });

  it("the rules file has alerts and the guide has runbooks", () => {
    assert.ok(rules.length >= 20, `only ${rules.length} rules`);
    assert.ok(runbooks.length >= 20, `only ${runbooks.length} runbooks under "${PART}"`);
  });

  for (const rule of rules) {
    it(`${rule.alert} (${rule.labels?.severity}) is routable and links its runbook`, () => {
      assert.match(
        rule.labels?.severity ?? "",
        /^(page|warn)$/,
        `${rule.alert}: severity must be page or warn`,
      );
      assert.ok((rule.annotations?.summary ?? "").trim() !== "", `${rule.alert} has no summary`);
      assert.ok((rule.annotations?.description ?? "").trim() !== "", `${rule.alert} has no description`);
      const url = rule.annotations?.runbook_url ?? "";
      const m = /^docs\/operator-guide\.md#([^#\s]+)$/.exec(url);
      assert.ok(m, `${rule.alert}: runbook_url ${JSON.stringify(url)} is not ${GUIDE}#<anchor>`);
      const target = all.find((h) => h.anchor === m[1]);
      assert.ok(target, `${rule.alert}: ${GUIDE} has no heading with the anchor #${m[1]}`);
      assert.ok(runbooks.includes(target), `${rule.alert}: #${m[1]} is not a runbook under "${PART}"`);
      assert.equal(target.text, rule.alert, `${rule.alert}: its runbook_url lands on "${target.text}"`);
    });
  }

  it("the fred commands the runbooks show parse", async () => {
    const program = await buildProgram();
    // Inline code spans, a command broken over two lines included; `sudo -u fred` dropped.
    const shown = [...partText(guide).matchAll(/`(?:sudo -u fred )?(fred [^`]+)`/g)].map((m) =>
      (m[1] as string).replace(/\s+/g, " "),
    );
    assert.ok(shown.length >= 15, `only ${shown.length} fred commands found`);
    const bad = shown.flatMap((c) => problems(program, c).map((p) => `${p} — ${c}`));
    assert.deepEqual(bad, []);
  });

  it(`every runbook under "${PART}" is an alert's`, () => {
    const orphans = runbooks.filter((h) => !alertNames.has(h.text)).map((h) => h.text);
    assert.deepEqual(orphans, [], `runbooks without an alert: ${orphans.join(", ")}`);
  });
});
