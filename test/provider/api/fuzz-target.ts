import { createHash } from "node:crypto";
import { join } from "node:path";
import Database from "better-sqlite3";
import { addressFromPubkey } from "../../../src/auth/address.ts";
import { compressedPubkey } from "../../../src/auth/keys.ts";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../../src/chain/proto/index.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { mockSkus, Stack, sha256 } from "../e2e/stack.ts";
import { TenantKey } from "./tenant-client.ts";

/**
 * What the route fuzz runs against: a devnet, two mock backends and providerd as real
 * processes on 127.0.0.1, with every listener budget raised so the fuzz reaches the
 * parsers instead of the limiters. Three leases give the routes something to refuse
 * about: an ACTIVE one placed on mock-1, a PENDING one waiting for its manifest, and a
 * billing-only one. `observe()` is the state a refused request must leave alone.
 */
export const MANIFEST = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
export const MANIFEST_HASH = createHash("sha256").update(MANIFEST).digest("hex");
/** A key that owns nothing on the devnet (its tokens verify, its leases do not exist). */
export const STRANGER_KEY_HEX = "3c9d1e5f7a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e1f3a5b7c9d1e3f5a7b9c1d";

export interface Leases {
  active: string;
  pending: string;
  billing: string;
}

export interface Observed {
  placements: string;
  payloads: string;
  backends: string;
  height: string;
  /** token_key → expires_at of the replay store. */
  tokens: Map<string, number>;
}

export class FuzzTarget {
  readonly stack = new Stack();
  owner!: TenantKey;
  ownerAddress = "";
  other!: TenantKey;
  readonly stranger = new TenantKey(STRANGER_KEY_HEX);
  leases!: Leases;
  readonly trackerPath = join(this.stack.dir, "tokens.db");

  async start(): Promise<void> {
    const s = this.stack;
    await s.start(
      (st) => {
        const served = mockSkus(st.sku("docker-small"), st.sku("docker-medium"));
        return [
          { MOCK_BACKEND_SKUS: served, MOCK_BACKEND_DELAY: "0s" },
          { MOCK_BACKEND_SKUS: served, MOCK_BACKEND_DELAY: "0s" },
        ];
      },
      (st) => {
        st.extraConfig = {
          billing_only_skus: [st.sku("billing-only")],
          token_tracker_db_path: this.trackerPath,
          rate_limit_rps: 1_000_000,
          rate_limit_burst: 1_000_000,
          tenant_rate_limit_rps: 1_000_000,
          tenant_rate_limit_burst: 1_000_000,
          callback_rate_limit_rps: 1_000_000,
          callback_rate_limit_burst: 1_000_000,
          // No periodic pass during the run: the store then changes only through requests.
          reconciliation_interval: "1h",
        };
      },
    );
    this.owner = new TenantKey(s.account("tenant1").private_key_hex);
    this.ownerAddress = addressFromPubkey(compressedPubkey(this.owner.privateKey));
    this.other = new TenantKey(s.account("tenant2").private_key_hex);
    await s.startProviderd();
    const [active] = await s.createLeases(1, "docker-small");
    const pending = await this.#lease("docker-small", sha256(MANIFEST));
    const billing = await this.#lease("billing-only");
    this.leases = { active: active!, pending, billing };
    await s.waitState([active!, billing], "LEASE_STATE_ACTIVE");
    // Quiescent before the first snapshot: the ACTIVE lease's placement is confirmed.
    const [w] = await s.workloads([active!]);
    if (w?.status !== "ready") throw new Error(`active lease is not ready on its backend: ${w?.status}`);
  }

  async #lease(sku: string, metaHash = new Uint8Array()): Promise<string> {
    const s = this.stack;
    const res = await s.tenant.send([
      {
        typeUrl: MsgCreateLease.typeUrl,
        value: MsgCreateLease.fromPartial({
          tenant: s.tenant.address,
          items: [{ skuUuid: s.sku(sku), quantity: 1n }],
          metaHash,
        }),
      },
    ]);
    return MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
  }

  get api(): string {
    return this.stack.api;
  }

  running(): boolean {
    return this.stack.providerd?.running() ?? false;
  }

  logTail(): string {
    return this.stack.providerd?.logTail() ?? "providerd is not running";
  }

  async observe(): Promise<Observed> {
    const s = this.stack;
    const status = (await (await fetch(`${s.devnet.rpc}/status`)).json()) as {
      result: { sync_info: { latest_block_height: string } };
    };
    const backends = await Promise.all(
      s.mocks.map(async (m, i) => {
        const metrics = await (await fetch(`${m.ready.url}/metrics`)).text();
        const calls = metrics.split("\n").filter((l) => l.startsWith("fred_backend_provisions_"));
        return `${sqliteRows(join(s.dir, `mock-${i + 1}.db`))} ${calls.join(",")}`;
      }),
    );
    return {
      placements: placementRows(s.placementPath, s.keys.provider_uuid),
      payloads: sqliteRows(s.payloadPath),
      backends: backends.join(" "),
      height: status.result.sync_info.latest_block_height,
      tokens: tokenRows(this.trackerPath),
    };
  }

  async close(): Promise<void> {
    await this.stack.close();
  }
}

/** Every row of every table, read beside the live writer (read-only), in a stable order. */
export function sqliteRows(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all() as string[];
    return tables
      .map((t) => {
        const rows = (db.prepare(`SELECT * FROM "${t}"`).raw().all() as unknown[][]).map((row) =>
          JSON.stringify(row),
        );
        return `${t}:\n${rows.sort().join("\n")}`;
      })
      .join("\n");
  } finally {
    db.close();
  }
}

/**
 * The lease-level rows: placements and unresolved attempts. The backends' inventory
 * baselines are left out on purpose: every recovery pass refreshes them, and one runs
 * whenever the event feed reconnects (an idle 0s-block devnet makes it do so every ~30 s).
 */
function placementRows(path: string, providerUuid: string): string {
  const store = PlacementStore.open(path, providerUuid, { readonly: true });
  try {
    return JSON.stringify(
      { placements: store.placements.placements(), attempts: store.placements.unresolvedAttempts() },
      null,
      1,
    );
  } finally {
    store.close();
  }
}

function tokenRows(path: string): Map<string, number> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("SELECT token_key, expires_at FROM used_tokens").raw().all() as [
      string,
      number,
    ][];
    return new Map(rows);
  } finally {
    db.close();
  }
}
