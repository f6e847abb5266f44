import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { REPO_ROOT } from "../../support/index.ts";

/**
 * The dashboard's browser tests drive Debian's chromium headless through playwright-core
 * (which downloads no browser). On a developer machine without it they skip with the line
 * below; in CI (`CI=true`, or REQUIRE_BROWSER=1 which .ci/run sets after installing it) a
 * missing chromium is a failure.
 */
export const CHROMIUM = "/usr/bin/chromium";
export const ARTIFACTS = join(REPO_ROOT, "test-artifacts", "dashboard");

export function browserSkip(): false | string {
  if (existsSync(CHROMIUM)) return false;
  if (process.env.CI === "true" || process.env.REQUIRE_BROWSER === "1")
    throw new Error(
      `${CHROMIUM} is missing (CI=true or REQUIRE_BROWSER=1): .ci/run installs Debian's chromium`,
    );
  return `no ${CHROMIUM} (apt-get install chromium): the dashboard's browser tests skip`;
}

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  // --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}

/**
 * Everything a page did wrong while watched: console errors and warnings (CSP violations
 * among them), uncaught exceptions, requests that failed and responses of 400 or more.
 * `excusing(patterns, action)` excuses the problems a test causes on purpose (a refused
 * token, an unknown lease) while `action` runs, and only then.
 */
export function watch(page: Page) {
  const problems: string[] = [];
  const excused: RegExp[] = [];
  const add = (p: string) => {
    if (!excused.some((re) => re.test(p))) problems.push(p);
  };
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") add(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => add(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    const error = r.failure()?.errorText;
    // The browser drops a favicon still loading when the test reloads or leaves the page.
    if (error === "net::ERR_ABORTED" && r.url().endsWith("/favicon.svg")) return;
    add(`request failed: ${r.method()} ${r.url()} ${error}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) add(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return {
    problems,
    async excusing<T>(patterns: RegExp[], action: () => Promise<T>): Promise<T> {
      excused.push(...patterns);
      try {
        return await action();
      } finally {
        excused.length = 0;
      }
    },
    clear() {
      problems.length = 0;
      excused.length = 0;
    },
  };
}

/**
 * Runs `source` (a JavaScript function, as text) in the page with `arg`. The in-page readers
 * below are text because this project type-checks against Node's globals, not the DOM's.
 */
function inPage<T>(page: Page, source: string, arg: unknown = null): Promise<T> {
  return page.evaluate(`(${source})(${JSON.stringify(arg)})`) as Promise<T>;
}

/** Each table of the page with a caption, as caption → { row header → first cell's text }. */
export function countTables(page: Page): Promise<Record<string, Record<string, string>>> {
  return inPage(
    page,
    `() => Object.fromEntries([...document.querySelectorAll("table")]
      .filter((t) => t.caption !== null)
      .map((t) => [t.caption.textContent.trim(), Object.fromEntries([...t.tBodies[0].rows]
        .filter((r) => r.querySelector("th") !== null)
        .map((r) => [r.querySelector("th").textContent.trim(), r.querySelector("td")?.textContent.trim() ?? ""]))]))`,
  );
}

/** The text of column `heading` in every body row of the table whose caption starts with `caption`. */
export function column(page: Page, caption: string, heading: string): Promise<string[]> {
  return inPage(
    page,
    `([caption, heading]) => {
      const t = [...document.querySelectorAll("table")].find((x) => x.caption?.textContent.trim().startsWith(caption));
      if (t === undefined) return [];
      const i = [...t.tHead.rows[0].cells].findIndex((c) => c.textContent.trim() === heading);
      if (i < 0) return [];
      return [...t.tBodies[0].rows].filter((r) => r.cells.length > i).map((r) => r.cells[i].textContent.trim());
    }`,
    [caption, heading],
  );
}

/** Presses Tab until the focused element matches `selector` (at most `max` presses); its HTML or undefined. */
export async function tabTo(page: Page, selector: string, max = 20): Promise<string | undefined> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press("Tab");
    const html = await inPage<string | null>(
      page,
      "(s) => document.activeElement?.matches(s) ? document.activeElement.outerHTML.slice(0, 200) : null",
      selector,
    );
    if (html !== null) return html;
  }
  return undefined;
}

/** Whether the focused element draws a visible focus indicator (an outline or box shadow). */
export function focusVisible(page: Page): Promise<boolean> {
  return inPage(
    page,
    `() => { const s = getComputedStyle(document.activeElement);
      return (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== "none"; }`,
  );
}

/** sessionStorage's operator token in the page, or null. */
export function storedToken(page: Page): Promise<string | null> {
  return inPage(page, `() => sessionStorage.getItem("fred-operator-token")`);
}
