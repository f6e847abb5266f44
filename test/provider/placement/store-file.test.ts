import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { inspectPlacementStore } from "../../../src/provider/placement/init.ts";
import { migrateToPostgres } from "../../../src/provider/placement/migrate.ts";
import { placementStoreFile } from "../../../src/provider/placement/store-file.ts";
import { baseConfig, yamlOf } from "../config/fixtures.ts";

/** The offline tools of the SQLite placement file, given a config whose stores are in PostgreSQL. */
function postgresConfig() {
  const c = baseConfig();
  delete c.placement_store_db_path;
  c.database_url = "postgres://fred@127.0.0.1:1/fred?sslmode=verify-full&sslrootcert=/etc/fred/ca.pem";
  c.state_dir = "/var/lib/fred";
  return parseProviderConfig(yamlOf(c));
}

describe("placement tools with database_url", () => {
  it("the file tools refuse, naming the tool and the way to a file copy", () => {
    const config = postgresConfig();
    assert.throws(() => placementStoreFile(config, "fred placement snapshot"), {
      code: "ERR_CONFIG",
      message:
        /^fred placement snapshot works on the SQLite placement store file.*fred placement migrate --to sqlite:/,
    });
  });

  it("inspect reads the database instead, and says so when it cannot be reached (no URL query or password shown)", async () => {
    const config = postgresConfig();
    await assert.rejects(inspectPlacementStore(config), (err: Error & { code?: string }) => {
      assert.equal(err.code, "ERR_STORE_UNREACHABLE");
      assert.doesNotMatch(err.message, /sslrootcert|hunter2/);
      return true;
    });
  });

  it("the state directory is state_dir, and migrate --to postgres refuses a config already there", async () => {
    const config = postgresConfig();
    assert.equal(config.stateDir, "/var/lib/fred");
    assert.equal(config.operatorTokenFile, "/var/lib/fred/operator-token");
    await assert.rejects(
      migrateToPostgres(config, "postgres://fred@127.0.0.1:1/other", undefined, () => {}),
      {
        code: "ERR_PLACEMENT_MIGRATE_REFUSED",
        message: /already keeps its stores in PostgreSQL/,
      },
    );
  });

  it("without database_url the state directory is the placement store's", () => {
    const config = parseProviderConfig(yamlOf(baseConfig()));
    assert.equal(config.stateDir, "/tmp/fred");
    assert.equal(placementStoreFile(config, "fred placement repair"), "/tmp/fred/placements.db");
  });
});
