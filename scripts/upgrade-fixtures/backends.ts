import { createHash } from "node:crypto";
import { join } from "node:path";
import { requestDigest } from "../../src/backend/kit/admission.ts";
import { Journal, type LeaseRecord, RetentionStore } from "../../src/backend/kit/index.ts";
import { openMockState } from "../../test/upgrade/records.ts";
import type { FixtureLeases, LeaseRole } from "./devnet.ts";
import { AT, BACKENDS, OPS } from "./ids.ts";

/**
 * The backends' journals as the fixture's leases leave them, written through the kit's
 * Journal and RetentionStore: Docker's (`db_path`) with ready, in-flight, failed and
 * closed leases, a settled restart, a retained lease's volume records, tombstones and
 * undelivered callbacks; the mock backend's journal and its substrate state file.
 */
const SKU = "d836e5f7-1304-452c-b748-c3d4e5f60718";
const PROFILE = { cpu_cores: 0.5, memory_mb: 512, disk_mb: 1024 };

function admission(
  chain: FixtureLeases,
  role: LeaseRole,
  backend: string,
  operationId: string,
  services: string[],
) {
  const leaseUuid = chain.leases[role];
  const payload = chain.payloads[role];
  const payloadHash = payload === undefined ? undefined : createHash("sha256").update(payload).digest("hex");
  const items =
    services.length === 1 && services[0] === "app"
      ? [{ sku: SKU, quantity: 1 }]
      : services.map((s) => ({ sku: SKU, quantity: 1, service_name: s }));
  const tenant = "manifest1fixturetenant";
  return {
    leaseUuid,
    tenant,
    providerUuid: chain.providerUuid,
    operationId,
    callbackUrl: `https://providerd.example:8443/callbacks/provision?operation_id=${operationId}`,
    lifecycleUrl: `https://providerd.example:8443/callbacks/provision?lifecycle_id=${operationId}`,
    items,
    instances: services.map((s) => ({
      key: `${leaseUuid}-${s}-0`,
      service: s,
      index: 0,
      sku: SKU,
      profile: PROFILE,
    })),
    payload,
    payloadHash,
    image: payload === undefined ? "" : `fixture/${backend}:${services.join("-")}`,
    requestDigest: requestDigest({ tenant, providerUuid: chain.providerUuid, items, payloadHash }),
    nowMs: AT + 1_500,
  };
}

/** Admits, starts and (unless `outcome` is "running") settles one provision. */
function provision(
  journal: Journal,
  input: ReturnType<typeof admission>,
  outcome: "ready" | "failed" | "running",
): LeaseRecord {
  const admitted = journal.admitOperation(input);
  const started = journal.markStarted(input.leaseUuid, admitted.generation, admitted);
  if (started === undefined) throw new Error(`lease ${input.leaseUuid} did not start`);
  if (outcome === "ready") journal.settleSuccess(input.leaseUuid, started.generation, AT + 2_000);
  if (outcome === "failed") {
    const failure = { reason: "ImagePullFailed", message: "the image could not be pulled" };
    journal.settleFailure(input.leaseUuid, started.generation, failure, AT + 2_000);
  }
  return journal.getLease(input.leaseUuid) as LeaseRecord;
}

export function writeDockerJournal(path: string, chain: FixtureLeases): void {
  const journal = new Journal({
    path,
    mode: "initialize",
    storageId: BACKENDS[0].storageId,
    backendName: "docker-1",
  });
  try {
    const active = provision(journal, admission(chain, "active", "docker-1", OPS.active, ["web"]), "ready");
    provision(journal, admission(chain, "pending", "docker-1", OPS.pending, ["app"]), "running");
    provision(journal, admission(chain, "disputed", "docker-1", OPS.disputed, ["app"]), "ready");
    provision(journal, admission(chain, "failed", "docker-1", OPS.failed, ["app"]), "failed");

    // A restart of the active lease, run to completion.
    const restart = journal.maintenance.admit({
      req: {
        kind: "restart",
        leaseUuid: active.leaseUuid,
        maintenanceId: OPS.restart,
        callbackUrl: active.lifecycleUrl,
        admittedAt: "2026-01-15T00:00:07.000000000Z",
        admittedKey: "2026-01-15T00:00:07.000000000Z",
        payload: undefined,
        payloadHash: undefined,
      },
      generation: active.generation,
      operationId: active.operationId,
      sourceRelease: active.release,
      image: active.image,
      nowMs: AT + 7_000,
    });
    if (restart === undefined) throw new Error("the fixture's restart was not admitted");
    journal.maintenance.markStarted(OPS.restart);
    journal.maintenance.settleSuccess({ ...restart, phase: "started" }, AT + 8_000);

    // The retained lease: ready, then closed with its two volumes kept.
    const retainedInput = admission(chain, "retained", "docker-1", OPS.retained, ["app", "db"]);
    provision(journal, retainedInput, "ready");
    const retentions = new RetentionStore(journal);
    const closing = journal.beginClose(retainedInput.leaseUuid, AT + 4_000);
    if (closing.kind !== "closing") throw new Error(`the retained lease did not close: ${closing.kind}`);
    retentions.insertClosing(closing.lease, "", AT + 4_000);
    const volumes = [
      { name: `fred-${retainedInput.leaseUuid}-app-0`, service: "app", index: 0, bytes: 3 * 1024 * 1024 },
      { name: `fred-${retainedInput.leaseUuid}-db-0`, service: "db", index: 0, bytes: 17 * 1024 * 1024 },
    ];
    const row = retentions.get(retainedInput.leaseUuid);
    if (row === undefined || !retentions.activate(row, "", volumes, "btrfs:0:42", AT + 4_500)) {
      throw new Error("the retained lease's volumes were not recorded");
    }
    if (!journal.completeClose(retainedInput.leaseUuid, closing.lease.generation, AT + 5_000, true)) {
      throw new Error("the retained lease's close did not complete");
    }
  } finally {
    journal.close();
  }
}

export async function writeMockBackend(dir: string, chain: FixtureLeases): Promise<void> {
  const journalPath = join(dir, "journal.db");
  const journal = new Journal({
    path: journalPath,
    mode: "bind-or-verify",
    storageId: BACKENDS[1].storageId,
    backendName: "mock-1",
  });
  // The mock keeps its fake workloads beside the journal (`<db_path>.substrate`).
  const substrate = openMockState(`${journalPath}.substrate`);
  try {
    const signal = new AbortController().signal;
    const runs: [LeaseRole, string, "ready" | "running"][] = [
      ["served", OPS.served, "ready"],
      ["disputed", OPS.disputedMock, "ready"],
      ["probing", OPS.probing, "running"],
    ];
    for (const [role, operationId, outcome] of runs) {
      const input = admission(chain, role, "mock-1", operationId, ["app"]);
      const lease = provision(journal, input, outcome);
      const spec = {
        ...input,
        release: lease.release,
        backendName: "mock-1",
        storageId: BACKENDS[1].storageId,
        manifest: undefined,
        createdAtMs: AT,
      };
      await substrate.create(spec, signal);
      if (outcome === "ready") await substrate.start(spec, signal);
    }
  } finally {
    await substrate.close();
    journal.close();
  }
}
