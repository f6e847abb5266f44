import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { Registry } from "prom-client";
import { addressFromPubkey } from "../../../src/auth/address.ts";
import { compressedPubkey } from "../../../src/auth/keys.ts";
import type { ChainLease, ChainPort } from "../../../src/chain/port.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { TenantApi, type TenantApiDeps } from "../../../src/provider/api/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { type BackendFleet, PlacementStore, type Placements } from "../../../src/provider/store/index.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { TenantKey } from "./tenant-client.ts";

/**
 * The tenant API in-process on a real listener (port 0) and a real placement store, with
 * a ManualClock so time-driven behaviour (pings, deadlines, lifetimes) is stepped, not
 * slept through. Only the chain is faked, at its port: `leases` is what it knows.
 */
export const TENANT_KEY_HEX = "8f7f28ced235ea1050d4f484312892104ba52a2fa8e8e631b431b3dc77e61d95";
export const OTHER_KEY_HEX = "1f7f28ced235ea1050d4f484312892104ba52a2fa8e8e631b431b3dc77e61d95";

export function chainLease(uuid: string, tenant: string, state = "LEASE_STATE_ACTIVE"): ChainLease {
  return {
    uuid,
    tenant,
    providerUuid: PROVIDER_UUID,
    state: state as ChainLease["state"],
    items: [],
    metaHash: "",
    createdAt: undefined,
    closedAt: undefined,
    lastSettledAt: undefined,
    acknowledgedAt: undefined,
    rejectedAt: undefined,
    expiredAt: undefined,
    rejectionReason: "",
    closureReason: "",
  };
}

export class Harness {
  readonly dir = mkdtempSync(join(tmpdir(), "fred-tenant-api-"));
  readonly clock = new ManualClock(Date.now());
  readonly leases = new Map<string, ChainLease>();
  readonly key = new TenantKey(TENANT_KEY_HEX);
  readonly other = new TenantKey(OTHER_KEY_HEX);
  /** Where the API's counters register (one per harness). */
  readonly registry = new Registry();
  readonly tenant = addressFromPubkey(compressedPubkey(this.key.privateKey));
  placementStore!: PlacementStore;
  /** The placement store's rooms, as the API receives them. */
  store!: Placements;
  fleet!: BackendFleet;
  api!: TenantApi;
  app!: FastifyInstance;
  url = "";

  /** `overrides` may be a function of the harness, for pieces built on its store. */
  async start(overrides: Partial<TenantApiDeps> | ((h: this) => Partial<TenantApiDeps>) = {}): Promise<this> {
    const config = parseProviderConfig(
      yamlOf({ ...baseConfig(), tenant_rate_limit_rps: 10_000, tenant_rate_limit_burst: 10_000 }),
    );
    this.placementStore = PlacementStore.create(
      join(this.dir, "placements.db"),
      PROVIDER_UUID,
      [
        {
          name: "one",
          storageId: "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b",
          baseline: { provisions: 0, retentions: 0 },
        },
      ],
      this.clock.now(),
    );
    this.store = this.placementStore.placements;
    this.fleet = this.placementStore.fleet;
    const chain = {
      getLease: async (uuid: string) => {
        this.chainReads++;
        return this.leases.get(uuid);
      },
    } as unknown as ChainPort;
    this.api = new TenantApi({
      config,
      chain,
      store: this.store,
      fleet: this.fleet,
      payloads: undefined,
      tokens: undefined,
      clients: new Map(),
      clock: this.clock,
      logger: createLogger("test", "silent"),
      payloadStored: () => {},
      leaseReads: { ttlMs: 0 },
      registry: this.registry,
      ...(typeof overrides === "function" ? overrides(this) : overrides),
    });
    this.app = Fastify();
    this.app.addHook("onRoute", (r) => {
      for (const method of [r.method].flat()) this.routes.push({ method, url: r.url });
    });
    this.api.register(this.app);
    await this.app.listen({ host: "127.0.0.1", port: 0 });
    this.url = `http://127.0.0.1:${(this.app.server.address() as { port: number }).port}`;
    return this;
  }

  /** Every route the tenant API registered (method, URL pattern). */
  readonly routes: { method: string; url: string }[] = [];

  /** Lease reads the fake chain has answered. */
  chainReads = 0;

  /** Adds a lease owned by the harness tenant (or `tenant`) to the fake chain. */
  lease(uuid: string, tenant = this.tenant): string {
    this.leases.set(uuid, chainLease(uuid, tenant));
    return uuid;
  }

  /** An access token stamped at the harness clock's now. */
  token(uuid: string, key = this.key): string {
    return key.access(uuid, Math.floor(this.clock.now() / 1000));
  }

  async close(): Promise<void> {
    if (this.app.server.listening) await this.app.close();
    this.api.close();
    this.placementStore.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
