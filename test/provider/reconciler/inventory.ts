import { readFileSync } from "node:fs";
import { BackendClient, type ProvisionEntry } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { SECRETS, SIDS, type Stack } from "../e2e/stack.ts";

/** What the stack's first backend reports it runs, read through providerd's own client. */
export async function backendInventory(stack: Stack): Promise<ProvisionEntry[]> {
  const config = parseProviderConfig(readFileSync(stack.configPath, "utf8"));
  const client = await BackendClient.create({
    backend: config.backends[0]!,
    secret: SECRETS[0]!,
    storageId: SIDS[0],
  });
  try {
    return (await client.inventory()).provisions;
  } finally {
    await client.close();
  }
}
