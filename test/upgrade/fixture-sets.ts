import { chmodSync, cpSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The committed upgrade fixtures: one directory per release under test/fixtures/upgrade/
 * (`v<version>/`, written by scripts/make-upgrade-fixtures.ts), each with a manifest.json
 * saying what its databases hold.
 */
export const FIXTURES_ROOT = fileURLToPath(new URL("../fixtures/upgrade/", import.meta.url));

/** Paths inside a fixture set, relative to its directory. */
export const LAYOUT = {
  manifest: "manifest.json",
  providerd: "providerd",
  dockerJournal: join("docker-backend", "journal.db"),
  mockJournal: join("mock-backend", "journal.db"),
  mockState: join("mock-backend", "journal.db.substrate"),
  devnet: "devnet",
} as const;

export interface FixtureSet {
  release: string;
  dir: string;
}

export function fixtureSets(root = FIXTURES_ROOT): FixtureSet[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory() && /^v\d+\.\d+\.\d+/.test(e.name))
    .map((e) => ({ release: e.name.slice(1), dir: join(root, e.name) }))
    .sort((a, b) => a.release.localeCompare(b.release, "en", { numeric: true }));
}

/**
 * Copies a fixture set to `dest`: the committed files are never opened in place (opening
 * migrates). Files become 0600, as the stores demand of their files; git keeps only 0644.
 */
export function copyFixture(src: string, dest: string): void {
  cpSync(src, dest, { recursive: true });
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else chmodSync(path, 0o600);
    }
  };
  walk(dest);
}

export function readManifest<T>(dir: string): T {
  return JSON.parse(readFileSync(join(dir, LAYOUT.manifest), "utf8")) as T;
}
