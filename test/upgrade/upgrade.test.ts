/**
 * Upgrades keep every record (issue #31 item 5). Each committed fixture set under
 * test/fixtures/upgrade/ holds databases written by a released fred; today's stores open
 * a copy of them read-write (so every migration since runs) and must read back every
 * record the set's manifest lists, with the same values, and again on a second open.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createLogger } from "../../src/log.ts";
import { TokenTracker } from "../../src/provider/store/index.ts";
import { copyFixture, fixtureSets, LAYOUT, readManifest } from "./fixture-sets.ts";
import {
  type DevnetRecords,
  type JournalRecords,
  type ProviderdRecords,
  readDevnet,
  readJournal,
  readMockWorkloads,
  readProviderd,
} from "./records.ts";

interface Manifest {
  release: string;
  files: Record<string, { bytes: number; schema_version: number | null }>;
  providerd: ProviderdRecords & { tokens: { key: string; expires_at: number }[] };
  docker_backend: JournalRecords;
  mock_backend: { journal: JournalRecords; workloads: unknown[] };
  devnet: DevnetRecords;
}

/**
 * `actual` holds everything `expected` does, with equal values: objects may have gained
 * fields (a later release reads more), arrays keep their length and order (no record lost
 * or invented). Undefined fields are dropped first, as the manifest's JSON dropped them.
 */
function assertKeeps(actual: unknown, expected: unknown, at = "$"): void {
  const a = JSON.parse(JSON.stringify(actual ?? null)) as unknown;
  const e = expected;
  if (Array.isArray(e)) {
    assert.ok(Array.isArray(a), `${at}: expected an array`);
    assert.equal(a.length, e.length, `${at}: ${e.length} records expected, ${a.length} read`);
    for (const [i, item] of e.entries()) assertKeeps(a[i], item, `${at}[${i}]`);
  } else if (e !== null && typeof e === "object") {
    assert.ok(a !== null && typeof a === "object" && !Array.isArray(a), `${at}: expected an object`);
    for (const [k, v] of Object.entries(e)) assertKeeps((a as Record<string, unknown>)[k], v, `${at}.${k}`);
  } else {
    assert.deepEqual(a, e, at);
  }
}

/** user_version from a closed SQLite file's header: the schema the last open left. */
const schemaOf = (path: string) => readFileSync(path).readInt32BE(60);

const sets = fixtureSets();

it("there is a fixture set for at least one release", () => {
  assert.ok(sets.length > 0, "test/fixtures/upgrade/ holds no v<release>/ directory");
});

for (const set of sets) {
  describe(`upgrade from ${set.release}`, () => {
    const manifest = readManifest<Manifest>(set.dir);
    let dir: string;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), `fred-upgrade-${set.release}-`));
      copyFixture(set.dir, dir);
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it("the manifest covers every kind of record (so the checks below cannot pass empty)", () => {
      const p = manifest.providerd;
      const states = (rows: unknown[], field: string) =>
        new Set(rows.map((r) => (r as Record<string, string>)[field]));
      assert.deepEqual(states(p.placements, "state"), new Set(["confirmed", "conflict"]));
      assert.deepEqual(states(p.attempts, "kind"), new Set(["provision", "restore"]));
      assert.ok(p.retained.length > 0 && p.payloads.some((x) => x.promoted) && p.tokens.length > 0);
      assert.deepEqual(states(p.maintenance, "phase"), new Set(["settled", "accepted"]));
      const d = manifest.docker_backend;
      assert.deepEqual(states(d.leases, "status"), new Set(["ready", "provisioning", "failed"]));
      assert.ok(d.tombstones.length > 0 && d.outbox.length > 0 && d.diagnostics.length > 0);
      assert.ok(d.maintenance.length > 0 && d.operations.length > 0);
      assert.ok((d.retentions[0] as { volumes: unknown[] }).volumes.length > 0, "retained volume records");
      assert.ok(manifest.mock_backend.workloads.length > 0);
      assert.deepEqual(
        states(manifest.devnet.leases, "state"),
        new Set(["LEASE_STATE_PENDING", "LEASE_STATE_ACTIVE", "LEASE_STATE_CLOSED"]),
      );
    });

    const readAll = async () => {
      const providerd = join(dir, LAYOUT.providerd);
      const p = manifest.providerd;
      const { tokens: spent, ...records } = p;
      assertKeeps(await readProviderd(providerd, p.provider_uuid), records);
      // A spent token is still spent: using it again is refused as a replay.
      using tokens = TokenTracker.open(join(providerd, "tokens.db"));
      for (const t of spent) {
        assert.equal(
          await tokens.tryUse(t.key, t.expires_at, Date.now()),
          false,
          `token ${t.key} is still spent`,
        );
      }
      const d = manifest.docker_backend;
      assertKeeps(readJournal(join(dir, LAYOUT.dockerJournal), d.storage_id, "docker-1"), d);
      const m = manifest.mock_backend;
      assertKeeps(readJournal(join(dir, LAYOUT.mockJournal), m.journal.storage_id, "mock-1"), m.journal);
      assertKeeps(await readMockWorkloads(join(dir, LAYOUT.mockState)), m.workloads);
    };

    it("providerd's stores and both backends' journals keep every record, migrated to today's schema", async () => {
      await readAll();
      for (const [file, info] of Object.entries(manifest.files)) {
        if (info.schema_version === null) continue;
        assert.ok(schemaOf(join(dir, file)) >= info.schema_version, `${file} was not moved back`);
      }
    });

    it("opening everything a second time changes nothing and still reads every record", async () => {
      const databases = Object.keys(manifest.files).filter((f) => manifest.files[f]?.schema_version !== null);
      const versions = databases.map((f) => schemaOf(join(dir, f)));
      await readAll();
      assert.deepEqual(
        databases.map((f) => schemaOf(join(dir, f))),
        versions,
      );
    });

    it("the devnet starts from the fixture home and still shows every lease in its state", async () => {
      const logger = createLogger("upgrade-test", "warn");
      const read = await readDevnet(join(dir, LAYOUT.devnet), manifest.providerd.provider_uuid, logger);
      assert.equal(read.chain_id, manifest.devnet.chain_id);
      assert.ok(read.height >= manifest.devnet.height, `height ${read.height} < ${manifest.devnet.height}`);
      assertKeeps(read.leases, manifest.devnet.leases);
    });
  });
}
