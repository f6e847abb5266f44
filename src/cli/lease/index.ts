import type { Command } from "commander";
import { registerLeaseJourney } from "./journey.ts";
import { registerLeaseReads } from "./reads.ts";
import { registerLeaseShell } from "./shell.ts";
import { registerLeaseUsage } from "./usage.ts";

export { LOCAL_PROVIDER_URL, readManifest, UP_TLS_DIR } from "./context.ts";

/** `fred lease …`: the tenant's whole journey with a provider, from a wallet key alone. */
export function registerLeaseCommands(program: Command): void {
  const lease = program
    .command("lease")
    .description("Tenant commands: deploy, watch, reach, change, close and restore your leases")
    .addHelpText(
      "after",
      `
Every command prints one JSON result on stdout and a readable view on stderr; exit 0 or 1.
Key flags: --key-hex <hex> | --mnemonic <words> | --from <name> --home <devnet home>.
The provider is --provider-url, else FRED_PROVIDER_URL, else its api_url on chain, else
http://127.0.0.1:8080. HTTPS is always verified: besides Node's CAs (and NODE_EXTRA_CA_CERTS)
it trusts --ca-file <pem>, else fred up's local CA when --home is that fred up's devnet.

Examples:
  $ fred lease deploy --sku docker-small --manifest app.json --from tenant1 --home .fred/devnet
  $ fred lease connect $LEASE --from tenant1 --home .fred/devnet
  $ fred lease close $LEASE --from tenant1 --home .fred/devnet`,
    );
  registerLeaseJourney(lease);
  registerLeaseReads(lease);
  registerLeaseUsage(lease);
  registerLeaseShell(lease);
}
