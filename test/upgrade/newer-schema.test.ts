/**
 * A database written by a newer release is refused, never opened for writing and never
 * changed (issue #31 item 5): for every store, a copy of the newest fixture with its
 * user_version bumped past what today's code knows goes through the store's real opener,
 * and the error names both schema versions and the way back. providerd, started on such
 * a placement store, exits 1 with that one line and no stack trace.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { Journal } from "../../src/backend/kit/index.ts";
import { type ErrorCode, isFredError } from "../../src/core/errors.ts";
import { homePaths } from "../../src/devnet/home.ts";
import { startDevnet } from "../../src/devnet/main.ts";
import { createLogger } from "../../src/log.ts";
import { PayloadStore, PlacementStore, TokenTracker } from "../../src/provider/store/index.ts";
import { baseConfig, yamlOf } from "../provider/config/fixtures.ts";
import { runFred } from "../support/index.ts";
import { copyFixture, fixtureSets, LAYOUT, readManifest } from "./fixture-sets.ts";
import { openMockState } from "./records.ts";

interface Manifest {
  providerd: { provider_uuid: string };
  docker_backend: { storage_id: string };
  mock_backend: { journal: { storage_id: string } };
}

const newest = fixtureSets().at(-1);
if (newest === undefined) throw new Error("test/fixtures/upgrade/ holds no fixture set");
const manifest = readManifest<Manifest>(newest.dir);

interface Case {
  name: string;
  file: string;
  code: ErrorCode;
  label: string;
  /** Opens the file the way its owner does at start (and closes it if that succeeds). */
  open(path: string): Promise<void> | void;
}

const CASES: Case[] = [
  {
    name: "placement store",
    file: join(LAYOUT.providerd, "placements.db"),
    code: "ERR_STORE_SCHEMA_NEWER",
    label: "placement store",
    open: (path) => PlacementStore.open(path, manifest.providerd.provider_uuid).close(),
  },
  {
    name: "payload store",
    file: join(LAYOUT.providerd, "payloads.db"),
    code: "ERR_STORE_SCHEMA_NEWER",
    label: "payload store",
    open: (path) => PayloadStore.open(path).close(),
  },
  {
    name: "token tracker",
    file: join(LAYOUT.providerd, "tokens.db"),
    code: "ERR_STORE_SCHEMA_NEWER",
    label: "token-tracker store",
    open: (path) => TokenTracker.open(path).close(),
  },
  {
    name: "Docker backend journal",
    file: LAYOUT.dockerJournal,
    code: "ERR_JOURNAL_TOO_NEW",
    label: "journal",
    open: (path) =>
      new Journal({
        path,
        mode: "verify",
        storageId: manifest.docker_backend.storage_id,
        backendName: "d",
      }).close(),
  },
  {
    name: "mock backend journal",
    file: LAYOUT.mockJournal,
    code: "ERR_JOURNAL_TOO_NEW",
    label: "journal",
    open: (path) =>
      new Journal({
        path,
        mode: "bind-or-verify",
        storageId: manifest.mock_backend.journal.storage_id,
        backendName: "m",
      }).close(),
  },
  {
    name: "mock substrate state",
    file: LAYOUT.mockState,
    code: "ERR_STORE_SCHEMA_NEWER",
    label: "mock substrate state",
    open: async (path) => {
      await openMockState(path).close();
    },
  },
  {
    name: "devnet chain database",
    file: join(LAYOUT.devnet, "data", "chain.sqlite"),
    code: "ERR_DEVNET_SCHEMA",
    label: "devnet database",
    open: async (path) => {
      const home = join(path, "..", "..");
      assert.equal(homePaths(home).db, path);
      const logger = createLogger("newer-schema-test", "warn");
      await (await startDevnet({ home, rpcPort: 0, blockTimeMs: 0, logger })).stop();
    },
  },
];

/**
 * Sets the file's user_version one past what it holds (today's schema, once today's code
 * opened it): the mark a newer release's migration leaves. Returns the version it held.
 */
function bumpSchema(path: string): number {
  const raw = new Database(path);
  try {
    const known = raw.pragma("user_version", { simple: true }) as number;
    raw.pragma(`user_version = ${known + 1}`);
    return known;
  } finally {
    raw.close();
  }
}

const refusal = (label: string, path: string, known: number) =>
  `${label} ${path}: database schema version ${known + 1} is newer than this fred knows (${known}); ` +
  "it was written by a newer release. Install that release again, or restore the snapshot taken " +
  "before the upgrade (docs/upgrading.md)";

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), "fred-newer-schema-"));
});
after(() => rmSync(root, { recursive: true, force: true }));

describe(`a database newer than the code (fixture ${newest.release}, bumped)`, () => {
  for (const c of CASES) {
    it(`${c.name}: refused with both versions and the way back, its bytes untouched`, async () => {
      const dir = join(root, c.name.replaceAll(" ", "-"));
      copyFixture(newest.dir, dir);
      const path = join(dir, c.file);
      // Today's code first brings the copy to the schema it knows; one more is "newer".
      await c.open(path);
      const known = bumpSchema(path);
      const bytes = readFileSync(path);

      await assert.rejects(
        async () => c.open(path),
        (err: unknown) => {
          assert.ok(isFredError(err, c.code), `expected ${c.code}, got ${String(err)}`);
          assert.equal(err.message, refusal(c.label, path, known));
          return true;
        },
      );
      assert.deepEqual(readFileSync(path), bytes, "the refused file is byte for byte what it was");
      for (const side of ["-wal", "-shm"])
        assert.equal(existsSync(`${path}${side}`), false, `no ${side} file`);
    });
  }
});

describe("fred providerd on a placement store from a newer release", () => {
  it("exits 1 with the refusal on one line, no stack trace, nothing on stdout", async () => {
    const dir = join(root, "providerd");
    copyFixture(newest.dir, dir);
    const path = join(dir, LAYOUT.providerd, "placements.db");
    PlacementStore.open(path, manifest.providerd.provider_uuid).close();
    const known = bumpSchema(path);
    const bytes = readFileSync(path);
    const config = join(dir, "providerd.yaml");
    writeFileSync(
      config,
      yamlOf({
        ...baseConfig(),
        provider_uuid: manifest.providerd.provider_uuid,
        placement_store_db_path: path,
      }),
    );

    const r = await runFred(["providerd", "-c", config]);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr.trim(), `fred: ${refusal("placement store", path, known)}`);
    assert.deepEqual(readFileSync(path), bytes);
  });
});
