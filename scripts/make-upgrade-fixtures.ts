/**
 * Writes the upgrade fixture set of this release: real databases of every store that
 * outlives a process, written by this release's own store classes, plus a manifest of
 * what they hold. The upgrade test (test/upgrade/) opens every committed set with the
 * code of the day and demands the same records back.
 *
 *   npx tsx scripts/make-upgrade-fixtures.ts [--out <dir>]
 *
 * Default output: test/fixtures/upgrade/v<package.json version>/. An existing directory is
 * refused: a released set is history and is never rewritten.
 *
 * At each release (docs/upgrading.md §7): check out the release tag, run this script,
 * commit the new directory on main. Nothing else changes: the tests loop over every
 * directory under test/fixtures/upgrade/. The script fails when a store leaves a -wal,
 * -shm or lock file behind (every file must be whole on its own once committed) and
 * prints the total size (about 500 KB: mostly the empty pages of each schema).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import { createLogger } from "../src/log.ts";
import { copyFixture, FIXTURES_ROOT, LAYOUT } from "../test/upgrade/fixture-sets.ts";
import { readDevnet, readJournal, readMockWorkloads, readProviderd } from "../test/upgrade/records.ts";
import { writeDockerJournal, writeMockBackend } from "./upgrade-fixtures/backends.ts";
import { writeDevnetHome } from "./upgrade-fixtures/devnet.ts";
import { BACKENDS, TOKENS } from "./upgrade-fixtures/ids.ts";
import { writeProviderdStores } from "./upgrade-fixtures/providerd.ts";

const release = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;
const { values } = parseArgs({ options: { out: { type: "string" } } });
const out = values.out ?? join(FIXTURES_ROOT, `v${release}`);
if (existsSync(out)) {
  console.error(
    `${out} exists: a released fixture set is never rewritten (delete it only if it was never committed)`,
  );
  process.exit(1);
}

for (const sub of [LAYOUT.providerd, "docker-backend", "mock-backend", LAYOUT.devnet]) {
  mkdirSync(join(out, sub), { recursive: true });
}
const chain = await writeDevnetHome(join(out, LAYOUT.devnet));
await writeProviderdStores(join(out, LAYOUT.providerd), chain);
writeDockerJournal(join(out, LAYOUT.dockerJournal), chain);
await writeMockBackend(join(out, "mock-backend"), chain);

const files = listFiles(out);
const leftovers = files.filter((f) => /-(wal|shm)$|\.lock$|\.tmp-/.test(f));
if (leftovers.length > 0) {
  console.error(`stores left files behind (not checkpointed or not released): ${leftovers.join(", ")}`);
  process.exit(1);
}

// The manifest is read from a copy, exactly as the test will read the committed files.
const scratch = mkdtempSync(join(tmpdir(), "fred-upgrade-fixture-"));
try {
  copyFixture(out, scratch);
  const manifest = {
    release,
    written_by: "scripts/make-upgrade-fixtures.ts",
    files: Object.fromEntries(
      files.map((f) => [
        f,
        { bytes: statSync(join(out, f)).size, schema_version: schemaVersion(join(out, f)) },
      ]),
    ),
    lease_roles: chain.leases,
    providerd: {
      ...(await readProviderd(join(scratch, LAYOUT.providerd), chain.providerUuid)),
      tokens: TOKENS.map((t) => ({ key: t.key, expires_at: t.expiresAt })),
    },
    docker_backend: readJournal(join(scratch, LAYOUT.dockerJournal), BACKENDS[0].storageId, "docker-1"),
    mock_backend: {
      journal: readJournal(join(scratch, LAYOUT.mockJournal), BACKENDS[1].storageId, "mock-1"),
      workloads: await readMockWorkloads(join(scratch, LAYOUT.mockState)),
    },
    devnet: await readDevnet(
      join(scratch, LAYOUT.devnet),
      chain.providerUuid,
      createLogger("fixture", "warn"),
    ),
  };
  writeFileSync(join(out, LAYOUT.manifest), `${JSON.stringify(manifest, null, 2)}\n`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const total = listFiles(out).reduce((n, f) => n + statSync(join(out, f)).size, 0);
console.log(JSON.stringify({ out, release, files: listFiles(out), total_bytes: total }));

function listFiles(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

/**
 * user_version of a SQLite file from its header (offset 60), null for other files. Read
 * without SQLite: a read-only connection would leave -wal/-shm files in the fixture.
 */
function schemaVersion(path: string): number | null {
  const header = readFileSync(path).subarray(0, 100);
  if (header.length < 100 || header.toString("latin1", 0, 16) !== "SQLite format 3\0") return null;
  return header.readInt32BE(60);
}
