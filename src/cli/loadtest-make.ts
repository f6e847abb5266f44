import { existsSync, writeFileSync } from "node:fs";
import type { Command } from "commander";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../chain/proto/index.ts";
import { FredError } from "../core/errors.ts";
import { parseSkuSpec, resolvePrivateKey, type TxFlags, txClient, using, withTx } from "./chain.ts";
import { readManifest } from "./lease/index.ts";
import { printJson, say } from "./output.ts";

/**
 * `fred loadtest fixtures`: makes what `fred loadtest` needs on a local stack. It creates
 * `--leases` leases for the signing key (in transactions of at most 50 messages), with
 * the manifest's SHA-256 as their meta_hash when `--manifest` is given, and writes the
 * fixtures file (each lease with the manifest as its base64 payload) and, on request, the
 * key as a tenant key file (mode 0600). Everything is checked before the first tx.
 */
const MAX_LEASES = 500;
const MESSAGES_PER_TX = 50;

interface FixturesFlags extends TxFlags {
  leases: string;
  sku: string[];
  manifest?: string;
  out: string;
  tenantKeyOut?: string;
}

const usage = (message: string) => new FredError("ERR_USAGE", message);

function leaseCount(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_LEASES)
    throw usage(`--leases must be an integer from 1 to ${MAX_LEASES}`);
  return n;
}

export function registerFixturesCommand(loadtest: Command): void {
  withTx(
    loadtest
      .command("fixtures")
      .description("Create leases for a tenant key and write the fixtures file fred loadtest reads"),
  )
    .requiredOption("--leases <n>", `how many leases to create (1 to ${MAX_LEASES})`)
    .requiredOption("--sku <spec...>", "each lease's items as <uuid|name>[:quantity[:service]]")
    .option("--manifest <file>", "each lease's manifest: its SHA-256 is the meta_hash, its bytes the payload")
    .requiredOption("--out <file>", "the fixtures file to write")
    .option(
      "--tenant-key-out <file>",
      "also write the signing key as a tenant key file (mode 0600, new file)",
    )
    .addHelpText(
      "after",
      `
Leases with --manifest stay PENDING until their payload arrives: \`fred loadtest --scenario
payload\` uploads it (then the connection scenario has ACTIVE leases to read). Prints
{"fixtures","tenant","leases":[…]}.

Examples:
  $ fred loadtest fixtures --leases 20 --sku docker-small --manifest app.json --out fixtures.json --tenant-key-out tenant.hex --from tenant1 --home .fred/devnet
  $ fred loadtest --target http://127.0.0.1:8080 --scenario payload --fixtures fixtures.json --tenant-key-file tenant.hex`,
    )
    .action(async (o: FixturesFlags) => {
      const n = leaseCount(o.leases);
      const specs = o.sku.map(parseSkuSpec);
      const manifest = o.manifest === undefined ? undefined : await readManifest(o.manifest);
      if (o.tenantKeyOut !== undefined && existsSync(o.tenantKeyOut))
        throw usage(`--tenant-key-out ${o.tenantKeyOut} exists; give a new file`);
      const key = await resolvePrivateKey(o);
      const created: string[] = [];
      await using(await txClient(o), async (c) => {
        const items = [];
        for (const s of specs)
          items.push({
            skuUuid: await c.resolveSku(s.ref),
            quantity: s.quantity,
            serviceName: s.serviceName,
          });
        const metaHash = manifest === undefined ? new Uint8Array() : Buffer.from(manifest.metaHash, "hex");
        while (created.length < n) {
          const batch = Math.min(MESSAGES_PER_TX, n - created.length);
          const msg = {
            typeUrl: MsgCreateLease.typeUrl,
            value: MsgCreateLease.fromPartial({ tenant: c.address, items, metaHash }),
          };
          const res = await c.send(Array.from({ length: batch }, () => msg));
          for (const any of res.msgResponses)
            created.push(MsgCreateLeaseResponse.decode(any.value).leaseUuid);
          say(`fred: created ${created.length}/${n} leases (tx ${res.txHash})`);
        }
        const payload = manifest?.bytes.toString("base64");
        const leases = created.map((uuid) => ({
          lease_uuid: uuid,
          ...(payload === undefined ? {} : { payload }),
        }));
        writeFileSync(o.out, `${JSON.stringify({ leases }, null, 2)}\n`);
        if (o.tenantKeyOut !== undefined)
          writeFileSync(o.tenantKeyOut, `${Buffer.from(key).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
        printJson({ fixtures: o.out, tenant: c.address, leases: created });
      });
    });
}
