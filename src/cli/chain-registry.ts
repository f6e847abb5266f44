/**
 * `fred chain sku list` and `fred chain provider show`: the x/sku registry as an operator
 * sees it (what tenants can lease, and the provider record providerd must match). Reads
 * only, so no key flags.
 */
import type { Command } from "commander";
import { type Provider, type SKU, Unit } from "../chain/proto/index.ts";
import { FredError } from "../core/errors.ts";
import { isCanonicalUuid } from "../core/uuid.ts";
import { type ReadFlags, readClient, using, withRpc } from "./chain.ts";
import { ExitCode, printJson, say } from "./output.ts";

const UNIT_NAMES: Record<number, string> = {
  [Unit.UNIT_UNSPECIFIED]: "unspecified",
  [Unit.UNIT_PER_HOUR]: "per_hour",
  [Unit.UNIT_PER_DAY]: "per_day",
};

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

export function skuView(s: SKU): Record<string, unknown> {
  return {
    uuid: s.uuid,
    provider_uuid: s.providerUuid,
    name: s.name,
    unit: UNIT_NAMES[s.unit] ?? String(s.unit),
    base_price: s.basePrice === undefined ? null : { denom: s.basePrice.denom, amount: s.basePrice.amount },
    active: s.active,
    meta_hash: hex(s.metaHash),
  };
}

export function providerView(p: Provider): Record<string, unknown> {
  return {
    uuid: p.uuid,
    address: p.address,
    payout_address: p.payoutAddress,
    api_url: p.apiUrl,
    active: p.active,
    meta_hash: hex(p.metaHash),
  };
}

/** Left-aligned columns for people; the JSON on stdout stays the result. */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

function providerArg(uuid: string, what: string): string {
  if (!isCanonicalUuid(uuid))
    throw new FredError(
      "ERR_USAGE",
      `${what} must be a canonical lowercase UUID, got ${JSON.stringify(uuid)}`,
    );
  return uuid;
}

export function registerRegistryCommands(chain: Command): void {
  const sku = chain.command("sku").description("The chain's SKU registry (what tenants can lease)");
  withRpc(sku.command("list").description("List SKUs as a JSON array (a table on stderr)"))
    .option("--provider <uuid>", "only this provider's SKUs")
    .option("--all", "inactive SKUs too (default: active only)")
    .addHelpText(
      "after",
      `
Prints [{"uuid","provider_uuid","name","unit":"per_hour"|"per_day","base_price":{"denom","amount"},
"active","meta_hash"},…] on stdout and a table on stderr. base_price is per unit.

Examples:
  $ fred chain sku list
  $ fred chain sku list --provider 01a2…-… --all --rpc http://node:26657`,
    )
    .action(async (opts: ReadFlags & { provider?: string; all?: boolean }) => {
      const providerUuid = opts.provider === undefined ? undefined : providerArg(opts.provider, "--provider");
      await using(await readClient(opts), async (c) => {
        const skus = await c.skus({
          activeOnly: opts.all !== true,
          ...(providerUuid === undefined ? {} : { providerUuid }),
        });
        const rows = skus.map((s) => [
          s.uuid,
          s.name,
          s.basePrice === undefined ? "-" : `${s.basePrice.amount}${s.basePrice.denom}`,
          UNIT_NAMES[s.unit] ?? String(s.unit),
          s.active ? "yes" : "no",
          s.providerUuid,
        ]);
        say(textTable(["UUID", "NAME", "PRICE", "UNIT", "ACTIVE", "PROVIDER"], rows));
        say(`${skus.length} SKU(s)`);
        printJson(skus.map(skuView));
      });
    });

  const provider = chain.command("provider").description("The chain's provider registry");
  withRpc(
    provider
      .command("show")
      .description("Show a provider record as JSON")
      .argument("<uuid>", "provider UUID"),
  )
    .addHelpText(
      "after",
      `
Prints {"uuid","address","payout_address","api_url","active","meta_hash"}. Exit 1 with
{"error"} when the chain has no such provider.

Examples:
  $ fred chain provider show 01a2…-…
  $ fred chain provider show $PROVIDER --rpc http://node:26657`,
    )
    .action(async (uuid: string, opts: ReadFlags) => {
      providerArg(uuid, "provider UUID");
      await using(await readClient(opts), async (c) => {
        const record = await c.providerRecord(uuid);
        if (record === undefined) {
          printJson({ error: `provider ${uuid} not found` });
          throw new ExitCode(1);
        }
        printJson(providerView(record));
      });
    });
}
