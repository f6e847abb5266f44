import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { stringify } from "yaml";
import { Keyring } from "../../chain/keyring/index.ts";
import { systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { readKeys } from "../../devnet/home.ts";
import { createLogger } from "../../log.ts";
import { type ProviderConfig, parseProviderConfig } from "../../provider/config/index.ts";
import { readOperatorToken } from "../../provider/dashboard/index.ts";
import { type RunningProviderd, startProviderd } from "../../provider/main.ts";
import { CometRpcChainHistory } from "../../provider/placement/chain-history.ts";
import { initPlacementStore } from "../../provider/placement/init.ts";
import { PlacementStore } from "../../provider/store/index.ts";
import type { UpComponent } from "./component.ts";
import { registerProviderApiUrl } from "./provider-record.ts";

/**
 * providerd inside `fred up`: a development configuration generated from what the devnet
 * and the mock backend published (state under <home>/providerd/), the devnet `provider`
 * account in a test keyring, `placement init` on the first start, then the daemon.
 */
const PREFERRED_PORT = 8080;
/** The operator dashboard's port (operator_listen_addr's default) when free. */
const PREFERRED_OPERATOR_PORT = 8081;

function portIsFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const srv = createServer();
    srv.once("error", () => done(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => done(true)));
  });
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => done(port));
    });
  });
}

/** A bind refused because the address is taken (itself, or as the cause of a config error). */
function addressInUse(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  return e?.code === "EADDRINUSE" || e?.cause?.code === "EADDRINUSE";
}

function fact(facts: Map<string, string>, key: string): string {
  const v = facts.get(key);
  if (v === undefined)
    throw new FredError("ERR_UP_ORDER", `providerd needs the "${key}" fact from an earlier component`);
  return v;
}

/** Whether the placement store already pins `backend` (it was made for this stack). */
function pinnedTo(config: ProviderConfig, backend: string): boolean {
  using store = PlacementStore.open(config.placementStoreDbPath, config.providerUuid);
  return store.fleet.pins().has(backend);
}

/** Leases the placement store holds a record or an attempt for. */
function leasesHeld(config: ProviderConfig): number {
  using store = PlacementStore.open(config.placementStoreDbPath, config.providerUuid);
  const counts = store.placements.counts();
  return counts.placements + counts.conflicts + counts.attempts;
}

export const providerdUpComponent: UpComponent = {
  name: "providerd",
  async start(ctx) {
    const devnetHome = fact(ctx.facts, "devnet_home");
    const rpc = fact(ctx.facts, "rpc");
    const keys = readKeys(devnetHome);
    const provider = keys?.accounts.find((a) => a.name === "provider");
    if (keys === undefined || provider === undefined) {
      throw new FredError("ERR_UP_ORDER", `no devnet provider account in ${devnetHome}`);
    }
    const dir = resolve(ctx.home, "providerd");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const keyringDir = join(dir, "keyring");
    const keyring = new Keyring({ dir: keyringDir, backend: "test" });
    if (!(await keyring.list()).some((k) => k.name === "provider")) {
      await keyring.add("provider", provider.mnemonic);
    }
    let port = (await portIsFree(PREFERRED_PORT)) ? PREFERRED_PORT : await freePort();
    let operatorPort = (await portIsFree(PREFERRED_OPERATOR_PORT))
      ? PREFERRED_OPERATOR_PORT
      : await freePort();
    // HTTPS when fred up made its local CA (the chain takes only an https api_url).
    const certFile = ctx.facts.get("tls_cert_file");
    const keyFile = ctx.facts.get("tls_key_file");
    const scheme = certFile === undefined ? "http" : "https";
    const configPath = join(dir, "providerd.yaml");
    const backendName = fact(ctx.facts, "backend_name");
    const writeConfig = (): ProviderConfig => {
      const yaml = stringify({
        provider_uuid: keys.provider_uuid,
        provider_address: provider.address,
        chain_id: keys.chain_id,
        keyring_backend: "test",
        keyring_dir: keyringDir,
        key_name: "provider",
        websocket_url: `${rpc.replace(/^http/, "ws")}/websocket`,
        rpc_url: rpc,
        api_listen_addr: `127.0.0.1:${port}`,
        callback_base_url: `${scheme}://127.0.0.1:${port}`,
        ...(certFile === undefined || keyFile === undefined
          ? {}
          : { tls_cert_file: certFile, tls_key_file: keyFile }),
        placement_store_db_path: join(dir, "placements.db"),
        payload_store_db_path: join(dir, "payloads.db"),
        token_tracker_db_path: join(dir, "tokens.db"),
        // The dashboard; its token is made beside the stores (operator-token, 0600) on first start.
        operator_listen_addr: `127.0.0.1:${operatorPort}`,
        // The Manifest team's tenant tools (written for the reference v0.13) send restart and
        // update without Idempotency-Key: a local stack admits every tenant on the legacy terms.
        maintenance_legacy_idempotency_tenants: ["*"],
        billing_only_skus: keys.skus.filter((s) => s.billing_only).map((s) => s.uuid),
        backends: [
          {
            name: backendName,
            url: fact(ctx.facts, "backend_url"),
            hmac_secret: fact(ctx.facts, "backend_secret"),
            default: true,
          },
        ],
      });
      writeFileSync(configPath, `# Generated by fred up on every start; edits are overwritten.\n${yaml}`, {
        mode: 0o600,
      });
      return parseProviderConfig(yaml, {});
    };
    let config = writeConfig();
    const logger = createLogger("providerd");
    let remade: string | undefined;
    if (existsSync(config.placementStoreDbPath) && !pinnedTo(config, backendName)) {
      // The store was made for the other backend (`fred up` before `fred up --docker`, or
      // the reverse). Holding no lease, it is re-made for this one; holding leases, they
      // would be orphaned, so say what to do instead.
      const held = leasesHeld(config);
      if (held > 0)
        throw new FredError(
          "ERR_USAGE",
          `${config.placementStoreDbPath} holds ${held} lease(s) placed on another backend than ${backendName}; ` +
            `start the way you did before (fred up${backendName === "docker" ? "" : " --docker"}) and close them, ` +
            `or start over with fred up${backendName === "docker" ? " --docker" : ""} --reset (a new chain: every lease in ${ctx.home} goes)`,
        );
      rmSync(config.placementStoreDbPath, { force: true });
      for (const suffix of ["-wal", "-shm"])
        rmSync(`${config.placementStoreDbPath}${suffix}`, { force: true });
      remade = `            placement store re-made for backend ${backendName} (the old one held no lease)`;
    }
    if (!existsSync(config.placementStoreDbPath)) {
      const summary = await initPlacementStore(config, {
        chain: new CometRpcChainHistory(config.rpcUrl),
        clock: systemClock,
        signal: AbortSignal.timeout(60_000),
      });
      logger.info({ placement_store: summary.placement_store }, "placement store created");
    }
    let running: RunningProviderd;
    try {
      running = await startProviderd(config, { env: process.env, logger });
    } catch (err) {
      if (!addressInUse(err)) throw err;
      // A preferred port was free when checked and taken before the bind (another stack
      // starting beside this one): any free ports do.
      port = await freePort();
      operatorPort = await freePort();
      config = writeConfig();
      running = await startProviderd(config, { env: process.env, logger });
    }
    const url = `${scheme}://127.0.0.1:${port}`;
    ctx.facts.set("providerd_url", url);
    // The token rides in the fragment: a browser never sends it to the server, nor logs it.
    const dashboard =
      running.operatorUrl === undefined
        ? undefined
        : `${running.operatorUrl}/#token=${readOperatorToken(config.operatorTokenFile)}`;
    const record =
      scheme === "https"
        ? await registerProviderApiUrl({
            rpc,
            providerUuid: keys.provider_uuid,
            privateKeyHex: provider.private_key_hex,
            apiUrl: url,
          }).catch((err: Error) => ({ refused: err.message }))
        : { refused: "providerd serves plain http (no openssl to make a certificate)" };
    const caFile = ctx.facts.get("tls_ca_file");
    if (typeof record === "string") ctx.facts.set("api_url_on_chain", url);
    return {
      summary: [
        `providerd   ${url}  (config ${configPath})`,
        ...(remade === undefined ? [] : [remade]),
        typeof record === "string"
          ? `            provider record on chain: api_url ${url} (${record})`
          : `            api_url not registered on chain (${record.refused}); tenants pass --provider-url ${url}`,
        `            health: curl ${caFile === undefined ? "" : `--cacert ${caFile} `}${url}/health`,
        ...(dashboard === undefined ? [] : [`dashboard   ${dashboard}`]),
        `            create a lease: fred chain lease create --sku docker-small --from tenant1 --home ${devnetHome} --rpc ${rpc}`,
        `            watch it become ACTIVE: fred chain lease show <lease_uuid> --rpc ${rpc}`,
      ],
      stop: () => running.stop(),
    };
  },
};
