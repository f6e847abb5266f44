import type { Command } from "commander";
import type { CosmosChain } from "../../chain/cosmos/adapter.ts";
import type { ChainLease } from "../../chain/port.ts";
import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import {
  cancelLease,
  createLease,
  leaseArg,
  leaseView,
  parseSkuSpec,
  type SkuSpec,
  txClient,
  using,
} from "../chain.ts";
import { ExitCode, printJson } from "../output.ts";
import {
  apiForLease,
  type LeaseFlags,
  progress,
  providerUrl,
  readManifest,
  tenantApi,
  timeoutMs,
  withLeaseFlags,
} from "./context.ts";
import { checkBeforeCreate, checkRestorable, checkUpdate } from "./preflight.ts";
import { connectionUrls } from "./reads.ts";
import { TenantApi } from "./tenant-api.ts";
import { age, emit, outputMode, statusLines, table } from "./view.ts";
import { verdictOf, waitSettled } from "./wait.ts";

/**
 * The commands that change a lease: create, upload, deploy (create + upload + wait),
 * wait, restart, update, restore, close, and the tenant's list. Each logical command
 * that the API makes idempotent sends one `Idempotency-Key`, reused by its retries.
 */
interface WaitFlags {
  timeout: string;
  wait?: boolean;
  output?: string;
}

const SKU_HELP = "item as <uuid|name>[:quantity[:service]]; repeat for several items";

function withWait(cmd: Command): Command {
  return cmd.option("--timeout <duration>", "how long to wait for the lease to settle", "10m");
}

/**
 * Waits, prints the final status, and exits 1 with the reason when the lease did not come
 * up. After a restart or update (`maintenance`), a ready lease that carries a reason is a
 * command that failed and was rolled back: a success clears the reason.
 */
async function settle(
  api: TenantApi,
  uuid: string,
  flags: WaitFlags,
  untilActive: boolean,
  maintenance?: "restart" | "update",
): Promise<void> {
  const status = await waitSettled(api, uuid, { timeoutMs: timeoutMs(flags.timeout), untilActive, progress });
  const body = { lease_uuid: uuid, ...status };
  emit(outputMode(flags), body, () => statusLines(body));
  const verdict = verdictOf(status, untilActive);
  const why = `${status.reason === undefined ? "" : `: ${status.reason}`}${
    status.message === undefined ? "" : ` — ${status.message}`
  }`;
  if (verdict === "ready" && maintenance !== undefined && status.reason !== undefined) {
    progress(
      `${maintenance} of lease ${uuid} failed and was rolled back${why}; the lease runs its previous release`,
    );
    throw new ExitCode(1);
  }
  if (verdict === "ready")
    return progress(`lease ${uuid} is ready${await reachableAt(api, uuid, untilActive)}`);
  progress(`lease ${uuid} ${verdict === "ended" ? `ended (${status.state})` : "failed"}${why}`);
  throw new ExitCode(1);
}

/**
 * " at <url> …" for a lease that just came up (deploy, restore): where a person reaches it,
 * from its connection details. Best effort: a lease without a published port says nothing.
 */
async function reachableAt(api: TenantApi, uuid: string, untilActive: boolean): Promise<string> {
  if (!untilActive) return "";
  const urls = await api
    .lease(uuid, "connection")
    .then((answer) => connectionUrls(answer.body.connection))
    .catch(() => []);
  return urls.length === 0 ? "" : ` at ${urls.join(" ")}`;
}

/**
 * Runs `use` on a lease this command just created; when it fails, the lease (still
 * PENDING, so nothing was billed) is cancelled before the error is reported, so a failed
 * command leaves no stray lease behind.
 */
async function orCancel<T>(c: CosmosChain, uuid: string, use: () => Promise<T>): Promise<T> {
  try {
    return await use();
  } catch (err) {
    progress(`could not use lease ${uuid}: ${(err as Error).message}; cancelling it`);
    try {
      await cancelLease(c, uuid);
      progress(`cancelled lease ${uuid}`);
    } catch (cancelErr) {
      progress(
        `could not cancel lease ${uuid} (${(cancelErr as Error).message}); run: fred lease cancel ${uuid}`,
      );
    }
    throw err;
  }
}

async function upload(api: TenantApi, uuid: string, manifestPath: string): Promise<void> {
  const { bytes, metaHash } = await readManifest(manifestPath);
  await api.lease(uuid, "data", { method: "POST", body: bytes, metaHash });
  progress(`uploaded ${manifestPath} (${bytes.length} bytes) to lease ${uuid}`);
}

export function registerLeaseJourney(lease: Command): void {
  withLeaseFlags(lease.command("create").description("Create a lease on chain for the signing key"))
    .requiredOption("--sku <spec...>", SKU_HELP)
    .option("--manifest <file>", "manifest file; its SHA-256 becomes the lease's meta_hash")
    .addHelpText(
      "after",
      '\nPrints {"lease_uuid","tx_hash","height"}.\n\nExamples:\n  $ fred lease create --sku docker-small --manifest app.json --from tenant1 --home .fred/devnet',
    )
    .action(async (opts: LeaseFlags & { sku: string[]; manifest?: string }) => {
      const manifest = opts.manifest === undefined ? undefined : await readManifest(opts.manifest);
      const specs = opts.sku.map(parseSkuSpec);
      await using(await txClient(opts), async (c) => {
        const checked = await checkBeforeCreate(c, opts, specs, manifest?.bytes);
        printJson(await createLease(c, checked.specs, hexBytes(manifest?.metaHash)));
      });
    });

  withLeaseFlags(lease.command("upload").description("Upload a PENDING lease's manifest to its provider"))
    .argument("<uuid>", "lease UUID")
    .requiredOption("--manifest <file>", "the manifest whose SHA-256 is the lease's meta_hash")
    .addHelpText(
      "after",
      "\nExamples:\n  $ fred lease upload $LEASE --manifest app.json --from tenant1 --home .fred/devnet",
    )
    .action(async (uuid: string, opts: LeaseFlags & { manifest: string }) => {
      const api = await apiForLease(opts, leaseArg(uuid));
      await upload(api, uuid, opts.manifest);
      printJson({ lease_uuid: uuid, uploaded: true });
    });

  withWait(
    withLeaseFlags(
      lease
        .command("deploy")
        .description("Create a lease, upload its manifest and wait until it is ready (ACTIVE)"),
    ),
  )
    .requiredOption("--sku <spec...>", SKU_HELP)
    .requiredOption("--manifest <file>", "the manifest to deploy")
    .addHelpText(
      "after",
      `
Prints the lease's final status once ready: {"lease_uuid","state","provision_status",…};
exit 1 with the reason when it failed.

Examples:
  $ fred lease deploy --sku docker-small --manifest app.json --from tenant1 --home .fred/devnet
  $ fred lease deploy --sku docker-small:1:web --sku docker-small:1:db --manifest stack.json --key-hex $KEY --provider-url https://provider.example`,
    )
    .action(async (opts: LeaseFlags & WaitFlags & { sku: string[]; manifest: string }) => {
      const specs = opts.sku.map(parseSkuSpec);
      const { bytes, metaHash } = await readManifest(opts.manifest);
      await using(await txClient(opts), async (c) => {
        const checked = await checkBeforeCreate(c, opts, specs, bytes);
        const created = await createLease(c, checked.specs, hexBytes(metaHash));
        const uuid = created.lease_uuid;
        progress(`created lease ${uuid} (tx ${created.tx_hash}, height ${created.height})`);
        await orCancel(c, uuid, () => upload(checked.api, uuid, opts.manifest));
        await settle(checked.api, uuid, opts, true);
      });
    });

  withWait(withLeaseFlags(lease.command("wait").description("Wait until the lease is ready or has failed")))
    .argument("<uuid>", "lease UUID")
    .option("--active", "also wait for the chain to show the lease ACTIVE")
    .addHelpText(
      "after",
      "\nExamples:\n  $ fred lease wait $LEASE --active --from tenant1 --home .fred/devnet",
    )
    .action(async (uuid: string, opts: LeaseFlags & WaitFlags & { active?: boolean }) => {
      const api = await apiForLease(opts, leaseArg(uuid));
      await settle(api, uuid, opts, opts.active === true);
    });

  for (const op of ["restart", "update"] as const) {
    const cmd = withWait(
      withLeaseFlags(
        lease
          .command(op)
          .description(
            op === "restart"
              ? "Restart the lease's containers (same release, volumes kept) and wait until ready"
              : "Deploy a new manifest to a running lease; a failed update rolls back to the previous release",
          ),
      ),
    )
      .argument("<uuid>", "lease UUID")
      .option("--no-wait", "return as soon as the provider accepted the command");
    if (op === "update") cmd.requiredOption("--manifest <file>", "the new manifest");
    cmd
      .addHelpText(
        "after",
        op === "restart"
          ? "\nExamples:\n  $ fred lease restart $LEASE --from tenant1 --home .fred/devnet"
          : "\nExamples:\n  $ fred lease update $LEASE --manifest v2.json --from tenant1 --home .fred/devnet",
      )
      .action(async (uuid: string, opts: LeaseFlags & WaitFlags & { manifest?: string }) => {
        const api = await apiForLease(opts, leaseArg(uuid));
        const manifest = opts.manifest === undefined ? undefined : await readManifest(opts.manifest);
        if (manifest !== undefined) await checkUpdate(api, manifest.bytes);
        const body = manifest === undefined ? undefined : { payload: manifest.bytes.toString("base64") };
        const accepted = await api.lease(uuid, op, {
          method: "POST",
          idempotencyKey: TenantApi.idempotencyKey(),
          ...(body === undefined ? {} : { body }),
        });
        progress(`${op} accepted (HTTP ${accepted.status})`);
        if (opts.wait === false) return printJson({ lease_uuid: uuid, ...accepted.body });
        await settle(api, uuid, opts, false, op);
      });
  }

  // The source is `<source-uuid>` or `--from <source-uuid>`. `--from` also names the dev
  // account that signs, so here it may be given twice: a canonical UUID is the source
  // (dev account names never are UUIDs), anything else the account.
  const restore = withWait(
    withLeaseFlags(
      lease
        .command("restore")
        .description("Open a new lease holding a closed lease's retained data, and wait until it is ready"),
    ),
  );
  restore.options
    .find((o) => o.long === "--from")
    ?.argParser((value: string, previous: unknown) => [...(Array.isArray(previous) ? previous : []), value]);
  restore
    .argument("[source-uuid]", "the closed lease whose retained volumes to restore (or --from <source-uuid>)")
    .option(
      "--sku <spec...>",
      `the new lease's items (default: the source's; another tier is allowed); ${SKU_HELP}`,
    )
    .addHelpText(
      "after",
      `
The source lease is the argument or --from <source-uuid>; with --from it may sit beside
--from <dev account>, since a canonical UUID is never an account name.

Examples:
  $ fred lease restore $OLD --from tenant1 --home .fred/devnet
  $ fred lease restore --from $OLD --from tenant1 --home .fred/devnet
  $ fred lease restore --from $OLD --sku docker-medium --key-hex $KEY`,
    )
    .action(async (positional: string | undefined, raw: RestoreFlags) => {
      const { source: from, account } = restoreSource(positional, raw.from);
      const opts: LeaseFlags & WaitFlags & { sku?: string[] } = { ...raw, from: account };
      if (account === undefined) delete opts.from;
      await using(await txClient(opts), async (c) => {
        const source = await c.getLease(from);
        if (source === undefined) throw new FredError("ERR_USAGE", `the chain has no lease ${from}`);
        const specs = opts.sku === undefined ? sourceSpecs(source) : opts.sku.map(parseSkuSpec);
        const checked = await checkBeforeCreate(c, opts, specs, undefined);
        await checkRestorable(checked.api, source, c.address);
        // The source's meta_hash, as restore clients do: a lease without one is provisioned
        // (empty) the moment it is created, racing the restore; with one it waits for it.
        const created = await createLease(
          c,
          checked.specs,
          hexBytes(source.metaHash === "" ? undefined : source.metaHash),
        );
        const uuid = created.lease_uuid;
        progress(`created lease ${uuid} to restore ${from} into`);
        await orCancel(c, uuid, () =>
          checked.api.lease(uuid, "restore", {
            method: "POST",
            body: { from_lease_uuid: from },
            idempotencyKey: TenantApi.idempotencyKey(),
          }),
        );
        progress(`restore of ${from} into ${uuid} accepted`);
        await settle(checked.api, uuid, opts, true);
      });
    });

  withLeaseFlags(
    lease
      .command("cancel")
      .description("Cancel a PENDING lease of the signing key (nothing was billed); returns once committed"),
  )
    .argument("<uuid>", "lease UUID")
    .addHelpText(
      "after",
      '\nPrints {"lease_uuid","tx_hash","height","state"}. An ACTIVE lease is ended with fred lease close.\n\nExamples:\n  $ fred lease cancel $LEASE --from tenant1 --home .fred/devnet',
    )
    .action(async (uuid: string, opts: LeaseFlags) => {
      leaseArg(uuid);
      await using(await txClient(opts), async (c) => {
        const before = await c.getLease(uuid);
        if (before === undefined) throw new FredError("ERR_USAGE", `the chain has no lease ${uuid}`);
        if (before.tenant !== c.address)
          throw new FredError("ERR_USAGE", `lease ${uuid} belongs to another tenant (${before.tenant})`);
        if (before.state === "LEASE_STATE_ACTIVE")
          throw new FredError("ERR_USAGE", `lease ${uuid} is active: end it with fred lease close ${uuid}`);
        if (before.state !== "LEASE_STATE_PENDING")
          throw new FredError(
            "ERR_USAGE",
            `lease ${uuid} has already ended (${before.state}); only a PENDING lease can be cancelled`,
          );
        const tx = await cancelLease(c, uuid);
        const after = await c.getLease(uuid);
        printJson({ lease_uuid: uuid, ...tx, state: after?.state ?? null });
      });
    });

  withLeaseFlags(
    lease
      .command("close")
      .description("Close the lease on chain; returns once the close transaction is committed"),
  )
    .argument("<uuid>", "lease UUID")
    .option("--reason <text>", "closure reason (≤ 256 bytes)", "")
    .addHelpText(
      "after",
      '\nPrints {"lease_uuid","tx_hash","height","state"}.\n\nExamples:\n  $ fred lease close $LEASE --from tenant1 --home .fred/devnet',
    )
    .action(async (uuid: string, opts: LeaseFlags & { reason: string }) => {
      leaseArg(uuid);
      await using(await txClient(opts), async (c) => {
        const [outcome] = await c.closeLeases([uuid], opts.reason);
        if (outcome === undefined || outcome.status === "failed") {
          printJson({ lease_uuid: uuid, error: outcome?.error?.message ?? "close failed" });
          throw new ExitCode(1);
        }
        const after = await c.getLease(uuid);
        printJson({
          lease_uuid: uuid,
          tx_hash: outcome.txHash ?? null,
          height: outcome.height ?? null,
          state: after?.state ?? null,
        });
      });
    });

  withLeaseFlags(
    lease.command("list").description("The signing key's leases on chain, with the provider's status"),
  )
    .option("--state <state>", "only leases in this state (pending, active, closed, rejected, expired)")
    .addHelpText("after", "\nExamples:\n  $ fred lease list --from tenant1 --home .fred/devnet")
    .action(async (opts: LeaseFlags & { state?: string }) => {
      const mode = outputMode(opts);
      await using(await txClient(opts), async (c) => {
        const leases = await c.leasesByTenant(c.address, stateFilter(opts.state));
        const names = new Map((await c.activeSkus().catch(() => [])).map((sku) => [sku.uuid, sku.name]));
        const out = [];
        const rows = [["LEASE", "STATE", "STATUS", "SKU", "AGE", "URL", "RESTORABLE"]];
        for (const l of leases) {
          const view = leaseView(l);
          let restorable = "-";
          let url = "";
          const live = l.state === "LEASE_STATE_PENDING" || l.state === "LEASE_STATE_ACTIVE";
          // A text view also asks about ended leases: whether their data can be restored.
          if (live || mode === "text") {
            const api = await tenantApi(opts, await providerUrl(opts, c, l.providerUuid));
            const status = await api.lease(l.uuid, "status").catch(() => undefined);
            const provision = status?.body.provision_status;
            if (live && provision !== undefined) view.provision_status = provision;
            if (!live) restorable = provision === "retained" ? "yes" : "no";
            if (mode === "text" && l.state === "LEASE_STATE_ACTIVE")
              url =
                (await api
                  .lease(l.uuid, "connection")
                  .then((answer) => connectionUrls(answer.body.connection)[0])
                  .catch(() => undefined)) ?? "";
            if (mode === "text" && !live && provision !== undefined) view.provision_status = provision;
          }
          const state = l.state.replace("LEASE_STATE_", "").toLowerCase();
          const skus = l.items.map(
            (i) => `${names.get(i.skuUuid) ?? i.skuUuid}${i.quantity > 1n ? `×${i.quantity}` : ""}`,
          );
          rows.push([
            l.uuid,
            state,
            String(view.provision_status ?? "-"),
            skus.join(","),
            age(view.created_at),
            url || "-",
            restorable,
          ]);
          if (mode === "json") progress(`${l.uuid} ${state} ${view.provision_status ?? ""}`);
          out.push(view);
        }
        emit(mode, out, () => table(rows));
      });
    });
}

type RestoreFlags = Omit<LeaseFlags, "from"> & WaitFlags & { sku?: string[]; from?: string[] };

/**
 * Splits `restore`'s inputs into the source lease and the signing dev account: the
 * source is the positional argument or the one `--from` value that is a canonical UUID;
 * at most one other `--from` value names the account.
 */
export function restoreSource(
  positional: string | undefined,
  from: readonly string[] | undefined,
): { source: string; account: string | undefined } {
  const values = from ?? [];
  const uuids = values.filter(isCanonicalUuid);
  const names = values.filter((v) => !isCanonicalUuid(v));
  if (names.length > 1)
    throw new FredError("ERR_USAGE", `--from names one dev account, got ${names.join(", ")}`);
  if (uuids.length > 1 || (uuids.length === 1 && positional !== undefined))
    throw new FredError(
      "ERR_USAGE",
      "give the source lease once: as the argument or as --from <source-uuid>, not both",
    );
  const source = positional ?? uuids[0];
  if (source === undefined)
    throw new FredError(
      "ERR_USAGE",
      "name the lease to restore: fred lease restore <source-uuid> or --from <source-uuid> (a canonical lowercase UUID)",
    );
  return { source: leaseArg(source), account: names[0] };
}

function hexBytes(hex: string | undefined): Uint8Array {
  return hex === undefined ? new Uint8Array() : Buffer.from(hex, "hex");
}

function sourceSpecs(source: ChainLease): SkuSpec[] {
  return source.items.map((i) => ({ ref: i.skuUuid, quantity: i.quantity, serviceName: i.serviceName }));
}

function stateFilter(text: string | undefined) {
  if (text === undefined) return undefined;
  const state = `LEASE_STATE_${text.toUpperCase()}`;
  const known = ["PENDING", "ACTIVE", "CLOSED", "REJECTED", "EXPIRED"];
  if (!known.includes(text.toUpperCase()))
    throw new FredError("ERR_USAGE", `--state must be one of ${known.join(", ").toLowerCase()}`);
  return state as ChainLease["state"];
}
