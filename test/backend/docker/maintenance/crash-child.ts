import { armDockerCrashPoints } from "../../../../src/backend/docker/maintenance/index.ts";
import { type CrashCall, holdEventLoop, maintenanceSubstrate } from "./harness.ts";

/**
 * One restart or update on a fresh substrate, with the crash points of FRED_FAILPOINTS
 * armed. Reads `{storageId, volumeRoot, call}` as JSON on stdin; exits 0 when the call
 * returned, 2 when it threw (SIGKILL when an armed point was reached).
 */
const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const { storageId, volumeRoot, call } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
  storageId: string;
  volumeRoot: string;
  call: CrashCall;
};
armDockerCrashPoints(process.env.FRED_FAILPOINTS);
const substrate = await maintenanceSubstrate(storageId, volumeRoot);
const signal = new AbortController().signal;
const release = holdEventLoop();
try {
  if (call.op === "restart") await substrate.restart(call.spec, signal);
  else await substrate.update(call.current, call.next, signal);
  process.exitCode = 0;
} catch (err) {
  console.error(err);
  process.exitCode = 2;
} finally {
  await substrate.close();
  release();
}
