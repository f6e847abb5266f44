import type { FastifyInstance, FastifyRequest } from "fastify";
import { badRequest, notFound, parseLeaseUuid } from "../kit/index.ts";
import type { MockSubstrate } from "./substrate.ts";
import type { UsageDrive } from "./usage.ts";

/**
 * `POST /_mock/usage/{lease_uuid}` {"cpu_cores"?: n, "disk_bytes"?: n} (signed like every
 * contract route): drives the running lease's synthetic usage from the next sample on —
 * `cpu_cores` is the demand (above the SKU's cores the excess counts as throttled time),
 * `disk_bytes` is added to what its volumes hold. 400 on a bad body, 404 when the lease
 * has nothing running here.
 */
export const USAGE_DRIVE_PATH = "/_mock/usage/:uuid";

export function registerUsageDriveRoute(substrate: MockSubstrate) {
  return (app: FastifyInstance): void => {
    app.post(USAGE_DRIVE_PATH, async (req: FastifyRequest) => {
      let uuid: string;
      try {
        uuid = parseLeaseUuid((req.params as { uuid: string }).uuid);
      } catch (err) {
        throw badRequest((err as Error).message);
      }
      const drive = readDrive(req.body);
      if (!substrate.driveUsage(uuid, drive)) throw notFound("lease has nothing running here");
      return { status: "ok" };
    });
  };
}

function readDrive(body: unknown): UsageDrive {
  let raw: unknown;
  try {
    raw = JSON.parse(String(body ?? ""));
  } catch {
    raw = undefined;
  }
  const bad = () => badRequest('body must be {"cpu_cores"?: number ≥ 0, "disk_bytes"?: integer ≥ 0}');
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw bad();
  const o = raw as Record<string, unknown>;
  if (Object.keys(o).some((k) => k !== "cpu_cores" && k !== "disk_bytes")) throw bad();
  const drive: UsageDrive = {};
  if (o.cpu_cores !== undefined) {
    if (typeof o.cpu_cores !== "number" || !Number.isFinite(o.cpu_cores) || o.cpu_cores < 0) throw bad();
    drive.cpuCores = o.cpu_cores;
  }
  if (o.disk_bytes !== undefined) {
    if (!Number.isSafeInteger(o.disk_bytes) || (o.disk_bytes as number) < 0) throw bad();
    drive.diskBytes = o.disk_bytes as number;
  }
  return drive;
}
